# Developer and CI entry points. `make test` is what CI runs (.ci/run).
#
# The tests start real ZooKeeper servers (regcenter/zktest); each target that
# needs one first runs scripts/zookeeper.sh ensure, which finds ZooKeeper or,
# as root on Debian/Ubuntu, installs it with apt-get.

GO        ?= go
BENCHTIME ?= 1s
ZK_DIR    ?= .zk
ZK_PORT   ?= 2181

.PHONY: yaml-demo alerts-demo test test-job test-rest test-etcd test-job-etcd test-rest-etcd test-pg test-job-pg test-rest-pg test-books lint demo demo-placement demo-schedules demo-kubernetes demo-operate demo-history demo-onedb console-demo screenshots bench bench-go bench-dispatch bench-peers bench-check zookeeper postgresql chromium redis zk-start zk-stop

# Two streams run side by side, each one package at a time (-p 1): the job
# package (on ZooKeeper, then its etcd matrix), the dispatcher and the
# etcd and PostgreSQL cases of the dispatcher, the CLI and the HTTP API;
# and every other package, then the job package's PostgreSQL matrix. Each
# is about 24 minutes of tests (2026-12-03, a CI run: the job package 13
# min on ZooKeeper, 7 on etcd, 6.5 on PostgreSQL, the dispatcher 3.5; the
# other packages 18.5). One after the other they took 48.5 minutes. Within a stream
# packages stay one at a time: several start ZooKeeper servers and
# instance processes. The tests gate on events, not on time, so that a
# second stream (or any other busy process) beside them changes how long
# they take, not what they find.
test: zookeeper postgresql chromium bench-check lint
	$(MAKE) --no-print-directory -j2 --output-sync=line test-job test-rest

# The job package on ZooKeeper, then on etcd; then the dispatcher, then the
# etcd and PostgreSQL cases of the dispatcher, the CLI and the HTTP API.
test-job:
	$(GO) test -race -count=1 -timeout 30m ./job/
	$(MAKE) --no-print-directory test-job-etcd
	$(GO) test -race -count=1 -timeout 30m ./dispatch/
	$(MAKE) --no-print-directory test-rest-etcd
	$(MAKE) --no-print-directory test-rest-pg

# Every package but job and the dispatcher, then the job package on
# PostgreSQL.
test-rest:
	$(GO) test -race -count=1 -p 1 -timeout 30m $$($(GO) list ./... | grep -v -e '/shardjob/job$$' -e '/shardjob/dispatch$$')
	$(MAKE) --no-print-directory test-job-pg

# The same tests on etcd where registry semantics matter (a matrix, not
# copies): the job package's cluster tests (placement, caps, drain, health, records written behind,
# ranges, failover, flags, triggers) with SHARDJOB_TEST_REGISTRY=etcd, the
# dispatcher's registry leases, the CLI and the console's API. The etcd
# members run inside the test binaries: no install. The regcenter/etcd and
# jobfile etcd tests already run in ./... above. The books' property test
# runs 15 of its random sequences here (30 on ZooKeeper above; each run
# draws a new seed, and make test-books runs 500).
test-etcd: test-job-etcd test-rest-etcd

test-job-etcd:
	SHARDJOB_TEST_REGISTRY=etcd SHARDJOB_BOOKS_SEQUENCES=15 $(GO) test -race -count=1 -p 1 -timeout 30m \
		-run 'Cluster|Failover|Placement|Books|Drain|Reshard|Trigger|Flag|ServerID|RangeJob|HealthCheck|Unmonitored|Departure|Overlap|StartingDeadline|WrittenBehind|StartRegisters|ItemsFromData|ItemsGained|PassedIdle|MarkWent|NewJobsItem|NewJobEnabledLater|StartPlaces' ./job/

test-rest-etcd:
	$(GO) test -race -count=1 -p 1 -timeout 5m -run 'TestRegistrySessionEndFreesTasksAtOnce/etcd' ./dispatch/
	$(GO) test -race -count=1 -p 1 -timeout 5m -run 'TestEtcd' ./cmd/shardjob/ ./jobhttp/

# The same matrix on PostgreSQL: the job package's cluster tests with
# SHARDJOB_TEST_REGISTRY=postgres (one throwaway server per test binary,
# internal/testing/pgtest; the tests that cut one instance off run through
# a TCP proxy to it, as on ZooKeeper), the dispatcher's registry leases,
# the CLI (--pg, shardjob run --pg) and the HTTP API. The regcenter/postgres
# conformance tests already run in ./... above. On the 2-core test machine,
# beside other test runs, test-job-pg took 5m41s (the go test run 334 s).
test-pg: test-job-pg test-rest-pg

test-job-pg: postgresql
	SHARDJOB_TEST_REGISTRY=postgres SHARDJOB_BOOKS_SEQUENCES=15 $(GO) test -race -count=1 -p 1 -timeout 30m \
		-run 'Cluster|Failover|Placement|Books|Drain|Reshard|Trigger|Flag|ServerID|RangeJob|HealthCheck|Unmonitored|Departure|Overlap|StartingDeadline|WrittenBehind|NewOwnerMakesUp|FireMissedDuringCatchUp|FrozenInstance|StartRegisters|ItemsFromData|ItemsGained|PassedIdle|MarkWent|NewJobsItem|NewJobEnabledLater|StartPlaces' ./job/

test-rest-pg: postgresql
	$(GO) test -race -count=1 -p 1 -timeout 5m -run 'TestRegistrySessionEndFreesTasksAtOnce/postgres' ./dispatch/
	$(GO) test -race -count=1 -p 1 -timeout 5m -run 'TestPostgres' ./cmd/shardjob/ ./jobhttp/

# The load table's property test at depth: 500 random sequences of joins,
# leaves, crashes, restarts, drains and new jobs on ZooKeeper (make test
# runs 30, and 15 on etcd); SHARDJOB_BOOKS_SEED reruns a printed seed.
test-books: zookeeper
	SHARDJOB_BOOKS_SEQUENCES=500 $(GO) test -race -count=1 -timeout 60m -run TestBooksPropertyRandomSequences -v ./job/

lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt -l lists files that need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# Script and HTTP jobs from a YAML file with no Go code (example/yaml/nogo.yaml),
# run by `shardjob run`, next to the small service the HTTP job calls. The
# registry is an embedded etcd member with its data in .shardjob-nogo: nothing
# to install, no Java. `go run ./cmd/shardjob run --server-id two
# example/yaml/nogo.yaml` in another terminal joins it. It stops what it
# started when it ends, Ctrl-C included.
yaml-demo:
	@mkdir -p $(ZK_DIR)
	$(GO) build -o $(ZK_DIR)/receiver ./example/yaml/receiver
	$(GO) build -o $(ZK_DIR)/shardjob ./cmd/shardjob
	@pid=; \
	trap 'status=$$?; trap - EXIT; [ -z "$$pid" ] || kill $$pid 2>/dev/null; exit $$status' EXIT; \
	trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(ZK_DIR)/receiver & pid=$$!; \
	$(ZK_DIR)/shardjob run example/yaml/nogo.yaml

# Retries with backoff (example/yaml/retries.yaml): a job whose handler fails
# twice per fire, then succeeds, on an embedded etcd inside the process.
.PHONY: retries-demo
retries-demo:
	$(GO) run ./example/yaml -f example/yaml/retries.yaml
# Alerts for late and missed runs (example/yaml/alerts.yaml): a job that runs
# longer than its late bound, each late fire posted once, Slack-style, to the
# receiver, which prints it. Embedded registry in .shardjob-alerts; Ctrl-C stops
# both.
alerts-demo:
	@mkdir -p $(ZK_DIR)
	$(GO) build -o $(ZK_DIR)/receiver ./example/yaml/receiver
	$(GO) build -o $(ZK_DIR)/shardjob ./cmd/shardjob
	@pid=; \
	trap 'status=$$?; trap - EXIT; [ -z "$$pid" ] || kill $$pid 2>/dev/null; exit $$status' EXIT; \
	trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(ZK_DIR)/receiver & pid=$$!; \
	$(ZK_DIR)/shardjob run example/yaml/alerts.yaml

# The demos need nothing but Go: with no registry given they run on an etcd
# member inside the process (package regcenter/embedded), its data in a
# temporary directory removed at the end. DEMO_FLAGS points them elsewhere:
# make demo DEMO_FLAGS='-zk 127.0.0.1:2181' (ZooKeeper) or
# DEMO_FLAGS='-etcd 127.0.0.1:2379' (an etcd cluster).
DEMO_FLAGS ?=
demo:
	$(GO) run ./example/cluster $(DEMO_FLAGS)

# Placement across jobs: 30 one-item jobs over 3-4 instances, a drain, an alarm.
demo-placement:
	$(GO) run ./example/placement $(DEMO_FLAGS)

# Schedules beyond cron: overlap replace, a starting deadline, a window
# with a limit, excluded days, jitter, a chain of three jobs and its first
# fire's spans, a "trace:" line each (one instance, about 20 seconds).
demo-schedules:
	$(GO) run ./example/schedules $(DEMO_FLAGS)

# The rolling update a Kubernetes Deployment makes (example/kubernetes),
# replayed with shardjob run processes on the embedded default: three
# instances replaced one by one behind their readiness probes, and whether
# any fire was lost or ran twice (about half a minute).
demo-kubernetes:
	$(GO) run ./example/kubernetes/rollout

# What an operator does beyond the schedule, in one process on the
# embedded default (about half a minute): a retry with backoff, a late-run
# alert posted to a local webhook receiver, a backfill started through the
# HTTP API with its progress, a viewer's token refused, the audit trail.
demo-operate:
	$(GO) run ./example/operate

# The web console over a small cluster with jobs and a dispatcher (SQLite
# in a temporary directory): it prints the URL and the token to open it
# with.
console-demo:
	$(GO) run ./example/console $(DEMO_FLAGS)

# The console's screenshots in docs/console, taken by its browser test.
screenshots: zookeeper chromium
	SHARDJOB_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run TestConsoleScreenshots ./jobhttp

# The execution history: two instances, two jobs (one failing), recorded to
# SQLite by history.Recorder and printed through its Query API.
demo-history:
	$(GO) run ./example/history $(DEMO_FLAGS)

# Everything on one PostgreSQL: the registry, two instances running a
# sharded job recorded in the history, and the dispatcher under a cap. A
# throwaway server unless DEMO_FLAGS='-pg postgres://user@host:port/db'
# (the password in PGPASSWORD or a passfile).
demo-onedb: postgresql
	$(GO) run ./example/onedb $(DEMO_FLAGS)

# The fire path measured as a user sees it (tools/firebench: its own
# servers, instance processes), every measurement on each registry in
# turn — the embedded default, ZooKeeper, etcd and PostgreSQL — and a last
# table with their summaries side by side (about 25 minutes).
# FIREBENCH picks what to run.
FIREBENCH ?= -all -registry embedded,zookeeper,etcd,postgres
bench: zookeeper postgresql
	$(GO) run ./tools/firebench $(FIREBENCH)

# shardjob beside gocron and dcron, failover and reshard timings, and the
# dispatcher beside River (bench/, a module of its own so that the SDK's
# go.mod does not pull the peers in; its own ZooKeeper, Redis and
# PostgreSQL; about 25 minutes for -all). BENCH_PEERS picks what to run:
# -peers, -failover, -reshard, -firecost, -dispatch, or -all; the plots go
# to docs/perf. On etcd: BENCH_PEERS='-peers -peer-systems shardjob-etcd,dcron-etcd'.
BENCH_PEERS ?= -all
bench-peers: zookeeper redis postgresql
	cd bench && $(GO) run . $(BENCH_PEERS) -plots ../docs/perf

# The bench module's runs take minutes and are not part of CI; CI only
# compiles it (vet) and runs the unit tests of its analysis (no servers,
# under a second), so that it cannot rot.
bench-check:
	cd bench && $(GO) vet ./...
	cd bench && $(GO) test -count=1 ./...

bench-go: zookeeper postgresql
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count 1 ./...

zookeeper:
	bash scripts/zookeeper.sh ensure >/dev/null

# The peer benchmark's gocron and dcron run on Redis (scripts/redis.sh).
redis:
	bash scripts/redis.sh ensure >/dev/null

# The dispatcher's tests start throwaway PostgreSQL servers (internal/testing/pgtest).
postgresql:
	bash scripts/postgresql.sh ensure >/dev/null

# The console's browser tests (jobhttp) drive a headless Chromium.
chromium:
	bash scripts/chromium.sh ensure >/dev/null

# Dispatcher throughput and start latency (docs/performance.md); each run
# lasts DISPATCH_BENCH_TIME, on SQLite and on PostgreSQL with 3 nodes.
DISPATCH_BENCH_TIME ?= 60s
bench-dispatch: postgresql
	$(GO) run ./tools/dispatchbench -store sqlite -duration $(DISPATCH_BENCH_TIME)
	$(GO) run ./tools/dispatchbench -store postgres -nodes 3 -duration $(DISPATCH_BENCH_TIME)

# A standalone server on 127.0.0.1:$(ZK_PORT) with data in $(ZK_DIR), for
# trying things by hand.
zk-start:
	bash scripts/zookeeper.sh start $(ZK_DIR) $(ZK_PORT)

zk-stop:
	bash scripts/zookeeper.sh stop $(ZK_DIR)
