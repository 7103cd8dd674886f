// Command cluster shows sharding at work. One job fires every second; each
// fire is split into ten sharding items, and every item runs on exactly one
// live instance. Three instances start, one of them shuts down, and two new
// ones join; after each change the leader reshards and the items follow the
// instances. Every instance has its own registry session and server id,
// so the three to four schedulers in this one process behave exactly as
// separate processes on separate hosts would.
//
// From the repository root:
//
//	make demo
//
// or
//
//	go run ./example/cluster                         # an embedded etcd: nothing to install
//	go run ./example/cluster -zk 127.0.0.1:2181      # a running ZooKeeper
//	go run ./example/cluster -etcd 127.0.0.1:2379    # a running etcd cluster
//
// With neither flag the instances share one etcd member that runs inside
// this process, with its data in a temporary directory removed at the end.
// SHARDJOB_ZK and SHARDJOB_ETCD do what -zk and -etcd do. The demo takes about 25
// seconds and stops early, cleanly, on Ctrl-C (SIGINT) or SIGTERM. -v
// shows the schedulers' own log lines (elections, resharding) on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

const (
	jobName   = "city-report"
	itemCount = 10
	namespace = "shardjob-demo"
)

var cities = []string{"Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Chengdu",
	"Hangzhou", "Wuhan", "Xi'an", "Nanjing", "Tianjin"}

func main() {
	reg := demoreg.Register(nil)
	verbose := flag.Bool("v", false, "show the schedulers' log lines on stderr")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, stop, reg, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "cluster demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stopSignals func(), flags *demoreg.Flags, verbose bool) error {
	printHeader()

	logLevel := slog.LevelError
	if verbose {
		logLevel = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := flags.Start(startCtx, namespace)
	cancel()
	if err != nil && ctx.Err() != nil {
		fmt.Println("Interrupted.")
		return nil
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := reg.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the registry:", err)
		}
		if reg.Embedded() {
			fmt.Println("Registry stopped, its data removed.")
		}
	}()
	fmt.Printf("Registry: %s, namespace /%s\n", reg, namespace)

	d := &demo{rcConfig: reg.Config(), log: logger, board: newBoard(os.Stdout)}
	go d.board.run()
	defer d.shutdownAll()

	steps := []struct {
		say   string
		do    func(context.Context) error
		fires int
	}{
		{"Starting instance-1, instance-2 and instance-3.",
			func(ctx context.Context) error { return d.startAll(ctx, "instance-1", "instance-2", "instance-3") }, 6},
		{"instance-2 shuts down gracefully: it stops firing, lets its running items finish and leaves;\n    the leader gives its items to the two others before the next fire.",
			func(ctx context.Context) error { return d.stop(ctx, "instance-2") }, 5},
		{"instance-4 joins: the leader reshards over three instances before the next fire.",
			func(ctx context.Context) error { return d.startAll(ctx, "instance-4") }, 5},
		{"instance-5 joins: four instances now.",
			func(ctx context.Context) error { return d.startAll(ctx, "instance-5") }, 5},
	}
	for _, st := range steps {
		d.board.note(st.say)
		if err := st.do(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		if err := d.board.waitFires(ctx, st.fires); err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		d.board.note("Interrupted.")
	}
	stopSignals() // a second Ctrl-C ends the process at once
	d.board.note("Shutting every instance down gracefully.")
	d.shutdownAll()
	d.board.close()
	d.board.say("All instances have left the job.")
	return nil
}

func printHeader() {
	fmt.Printf(`shardjob cluster demo
=====================
Job %q fires every second. Each fire is split into %d sharding items,
one per city; every item runs on exactly one live instance:
`, jobName, itemCount)
	for row := 0; row < len(cities); row += 5 {
		var line strings.Builder
		for i := row; i < min(row+5, len(cities)); i++ {
			fmt.Fprintf(&line, "  %d=%-10s", i, cities[i])
		}
		fmt.Println(strings.TrimRight(line.String(), " "))
	}
	fmt.Print(`The instances below live in this one process, but each has its own
registry session and server id, exactly like separate processes would.
Each line is one fire: its time, then the items each instance ran.
Lines starting with >>> say what the demo does next.

`)
}

// demo holds the running instances.
type demo struct {
	rcConfig regcenter.Config
	log      *slog.Logger
	board    *board

	mu        sync.Mutex
	instances map[string]*instance
}

// instance is one scheduler on its own registry session, as one process
// of an application would have.
type instance struct {
	id    string
	rc    regcenter.Center
	sched *job.Scheduler
}

func jobConfig() job.Config {
	params := make([]string, len(cities))
	for i, c := range cities {
		params[i] = fmt.Sprintf("%d=%s", i, c)
	}
	return job.Config{
		Name:                   jobName,
		Cron:                   "* * * * * *", // every second
		ShardingTotalCount:     itemCount,
		ShardingItemParameters: strings.Join(params, ","),
		Failover:               true,
		Description:            "shardjob cluster demo",
		// The demo's config replaces whatever an earlier run left in
		// the registry (without it the stored config would win).
		Overwrite: true,
	}
}

// startAll starts instances concurrently, each with its own session.
func (d *demo) startAll(ctx context.Context, ids ...string) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = d.start(ctx, id) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (d *demo) start(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	log := d.log.With("instance", id)
	rc, err := regcenter.Open(ctx, d.rcConfig, regcenter.WithLogger(log))
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	sched, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(log))
	if err == nil {
		err = sched.Add(ctx, jobConfig(), d.board.job())
	}
	if err == nil {
		err = sched.Start(ctx)
	}
	if err != nil {
		rc.Close()
		return fmt.Errorf("%s: %w", id, err)
	}
	d.mu.Lock()
	if d.instances == nil {
		d.instances = map[string]*instance{}
	}
	d.instances[id] = &instance{id: id, rc: rc, sched: sched}
	d.mu.Unlock()
	return nil
}

// stop shuts one instance down gracefully and closes its session.
func (d *demo) stop(ctx context.Context, id string) error {
	d.mu.Lock()
	in := d.instances[id]
	delete(d.instances, id)
	d.mu.Unlock()
	if in == nil {
		return nil
	}
	start := time.Now()
	if err := in.shutdown(ctx); err != nil {
		return err
	}
	d.board.say(fmt.Sprintf("    %s has left (Shutdown returned after %v).", id, time.Since(start).Round(time.Millisecond)))
	return nil
}

func (in *instance) shutdown(ctx context.Context) error {
	// Running items get up to five seconds to finish; cleanup has its own
	// bounded time after that.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := in.sched.Shutdown(ctx)
	in.rc.Close()
	if err != nil {
		return fmt.Errorf("%s: shutdown: %w", in.id, err)
	}
	return nil
}

// shutdownAll stops every remaining instance, concurrently.
func (d *demo) shutdownAll() {
	d.mu.Lock()
	ins := d.instances
	d.instances = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() {
			if err := in.shutdown(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		})
	}
	wg.Wait()
}

// execution is one item run, as the job saw it.
type execution struct {
	fire   time.Time
	server string
	item   int
	kind   job.Kind
}

// marks flag the runs that were not a plain on-time fire, with what they
// mean; the meaning is printed the first time a mark shows up.
var marks = map[job.Kind]struct{ mark, meaning string }{
	job.KindMisfire:  {"*", "* = a misfire run: when the fire came the item was still marked running from the\n            previous fire, so it ran once, late, as soon as that run was marked finished"},
	job.KindFailover: {"+", "+ = a failover run: taken over from an instance that left before running it"},
	job.KindTrigger:  {"!", "! = run at once by an operator's trigger"},
}

// board collects executions from every instance and prints one line per
// fire, in fire order, once every item of the fire has run (or after a
// deadline, naming the items that did not run).
type board struct {
	out     io.Writer
	records chan execution

	mu        sync.Mutex
	fires     map[time.Time][]execution
	printed   time.Time     // latest fire printed
	count     int           // fire lines printed
	changed   chan struct{} // closed and replaced whenever count grows
	explained map[job.Kind]bool

	stop, done chan struct{}
}

func newBoard(out io.Writer) *board {
	return &board{out: out, records: make(chan execution, 256), fires: map[time.Time][]execution{},
		changed: make(chan struct{}), explained: map[job.Kind]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// job is what every instance runs: it "reports" on its item's city.
func (b *board) job() job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		// Pretend to work on sc.ItemParameter (the city) for a while, but
		// stop at once when asked to.
		select {
		case <-time.After(time.Duration(50+20*sc.Item) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		// Right before a side effect: do we still own the item?
		if err := sc.StillOwner(); err != nil {
			return err
		}
		select {
		case b.records <- execution{fire: sc.FireTime, server: sc.ServerID, item: sc.Item, kind: sc.Kind}:
		case <-b.done:
		}
		return nil
	})
}

// deadline is how long after a fire its line waits for missing items.
const deadline = 3 * time.Second

// run prints fire lines until close.
func (b *board) run() {
	defer close(b.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case e := <-b.records:
			b.add(e)
		case <-tick.C:
		case <-b.stop:
			return
		}
		b.flush(time.Now(), false)
	}
}

func (b *board) add(e execution) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !e.fire.After(b.printed) {
		fmt.Fprintf(b.out, "          (%s ran item %d of the fire of %s late, as a %s run)\n", e.server, e.item, e.fire.Format("15:04:05"), e.kind)
		return
	}
	b.fires[e.fire] = append(b.fires[e.fire], e)
}

// flush prints the fires that are complete or past their deadline, oldest
// first; all prints every pending fire.
func (b *board) flush(now time.Time, all bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pending := make([]time.Time, 0, len(b.fires))
	for f := range b.fires {
		pending = append(pending, f)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Before(pending[j]) })
	for _, f := range pending {
		recs := b.fires[f]
		if !complete(recs) && now.Sub(f) < deadline && !all {
			return // later fires wait for this one, to keep the order
		}
		b.printLine(f, recs)
		delete(b.fires, f)
		b.printed = f
		b.count++
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// complete reports whether every item ran.
func complete(recs []execution) bool {
	seen := map[int]bool{}
	for _, r := range recs {
		seen[r.item] = true
	}
	return len(seen) == itemCount
}

func (b *board) printLine(fire time.Time, recs []execution) {
	sort.Slice(recs, func(i, j int) bool { return recs[i].item < recs[j].item })
	byServer := map[string][]string{}
	ran := map[int]int{}
	var kinds []job.Kind
	for _, r := range recs {
		m := marks[r.kind]
		byServer[r.server] = append(byServer[r.server], fmt.Sprint(r.item)+m.mark)
		ran[r.item]++
		if m.mark != "" && !b.explained[r.kind] && !slices.Contains(kinds, r.kind) {
			kinds = append(kinds, r.kind)
		}
	}
	servers := make([]string, 0, len(byServer))
	for s := range byServer {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	var line strings.Builder
	line.WriteString(fire.Format("15:04:05"))
	for _, s := range servers {
		fmt.Fprintf(&line, "  %-23s", fmt.Sprintf("%s: [%s]", s, strings.Join(byServer[s], " ")))
	}
	var missing, twice []int
	for i := range itemCount {
		switch {
		case ran[i] == 0:
			missing = append(missing, i)
		case ran[i] > 1:
			twice = append(twice, i)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&line, "  (not run: %v)", missing)
	}
	if len(twice) > 0 {
		fmt.Fprintf(&line, "  (ran more than once: %v)", twice)
	}
	fmt.Fprintln(b.out, strings.TrimRight(line.String(), " "))
	for _, k := range kinds {
		b.explained[k] = true
		fmt.Fprintf(b.out, "          %s\n", marks[k].meaning)
	}
}

// note prints a line about what the demo does next.
func (b *board) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.out, "\n>>> %s\n", s)
}

// say prints a line.
func (b *board) say(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintln(b.out, s)
}

// waitFires waits until n more fire lines are printed.
func (b *board) waitFires(ctx context.Context, n int) error {
	b.mu.Lock()
	target := b.count + n
	b.mu.Unlock()
	for {
		b.mu.Lock()
		count, changed := b.count, b.changed
		b.mu.Unlock()
		if count >= target {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close stops run, then prints what is still pending. Call it once every
// instance is shut down, so that nothing reports any more.
func (b *board) close() {
	close(b.stop)
	<-b.done
	for {
		select {
		case e := <-b.records:
			b.add(e)
			continue
		default:
		}
		break
	}
	b.flush(time.Now(), true)
}
