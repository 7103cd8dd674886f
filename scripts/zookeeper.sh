#!/usr/bin/env bash
# zookeeper.sh finds (and if need be installs) ZooKeeper, and runs a local
# standalone server for the demo and for manual testing.
#
#   bash scripts/zookeeper.sh ensure              print ZooKeeper's home; install it if missing
#   bash scripts/zookeeper.sh classpath           print the Java classpath that runs the server
#   bash scripts/zookeeper.sh start [DIR] [PORT]  start a server in the background (default ./.zk, 2181)
#   bash scripts/zookeeper.sh stop [DIR]          stop the server started in DIR
#
# Where ZooKeeper comes from, first match wins:
#   1. $ZOOKEEPER_HOME: an unpacked Apache ZooKeeper release (jars in lib/),
#      or a Debian-style share dir whose jars live in ../java.
#   2. Debian's "zookeeper" package (jars in /usr/share/java).
#   3. If neither is there and we run as root on a machine with apt-get,
#      the Debian package is installed.
# The Go helper regcenter/zktest looks ZooKeeper up the same way.
#
# The server started here writes only inside DIR: data, log and pid file.
# Nothing goes to /etc or /var. Environment knobs: JAVA_HOME (which java),
# ZK_JAVA_OPTS (extra JVM flags), ZK_START_TIMEOUT (seconds, default 60).
set -euo pipefail

prog=zookeeper.sh
debian_java_dir=/usr/share/java
debian_home=/usr/share/zookeeper

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,9s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

install_hint() {
	cat >&2 <<EOF
$prog: ZooKeeper is not installed.
  On Debian/Ubuntu install it with:
      sudo apt-get update && sudo apt-get install -y zookeeper
  or download an Apache ZooKeeper release (apache-zookeeper-X.Y.Z-bin.tar.gz),
  unpack it, and point ZOOKEEPER_HOME at the unpacked directory:
      export ZOOKEEPER_HOME=/opt/apache-zookeeper-X.Y.Z-bin
  ZooKeeper needs Java 8 or newer (apt-get install default-jre-headless).
EOF
}

# jars_under DIR prints the jars an Apache release keeps in DIR/lib and DIR,
# one per line, sorted.
jars_under() {
	local d=$1 f
	for f in "$d"/lib/*.jar "$d"/*.jar; do
		[[ -f $f ]] && printf '%s\n' "$f"
	done | LC_ALL=C sort
}

# debian_classpath DIR prints the classpath for Debian's packaging: the
# zookeeper.jar manifest names its dependencies; the log4j binding is added
# so the server's log reaches stdout, and Netty's codec and resolver, which
# the manifest leaves out but the Netty connection factory (TLS) needs.
debian_classpath() {
	local d=$1 cp=$1/zookeeper.jar f
	for f in slf4j-log4j12.jar log4j-1.2.jar netty-codec.jar netty-resolver.jar; do
		[[ -f $d/$f ]] && cp+=:$d/$f
	done
	printf '%s\n' "$cp"
}

# find_classpath prints the classpath of the installed ZooKeeper, or fails.
find_classpath() {
	if [[ -n ${ZOOKEEPER_HOME:-} ]]; then
		local h=${ZOOKEEPER_HOME%/} jars
		if [[ ! -d $h ]]; then
			log "ZOOKEEPER_HOME=$ZOOKEEPER_HOME is not a directory"
			return 1
		fi
		jars=$(jars_under "$h")
		if grep -q '/zookeeper[^/]*\.jar$' <<<"$jars"; then
			paste -sd: <<<"$jars"
			return 0
		fi
		if [[ -f $h/../java/zookeeper.jar ]]; then
			debian_classpath "$(cd "$h/../java" && pwd)"
			return 0
		fi
		log "ZOOKEEPER_HOME=$ZOOKEEPER_HOME holds no zookeeper*.jar (looked in $h/lib, $h and $h/../java)"
		return 1
	fi
	if [[ -f $debian_java_dir/zookeeper.jar ]]; then
		debian_classpath "$debian_java_dir"
		return 0
	fi
	return 1
}

# find_home prints ZooKeeper's home directory, or fails.
find_home() {
	find_classpath >/dev/null || return 1
	if [[ -n ${ZOOKEEPER_HOME:-} ]]; then
		(cd "$ZOOKEEPER_HOME" && pwd)
	elif [[ -d $debian_home ]]; then
		printf '%s\n' "$debian_home"
	else
		printf '%s\n' "$debian_java_dir"
	fi
}

java_bin() {
	if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
		printf '%s\n' "$JAVA_HOME/bin/java"
	else
		command -v java
	fi
}

cmd_ensure() {
	local home
	if ! home=$(find_home); then
		if [[ -n ${ZOOKEEPER_HOME:-} ]]; then
			install_hint
			exit 1
		fi
		if ! can_apt_install; then
			install_hint
			exit 1
		fi
		apt_install zookeeper
		home=$(find_home) || {
			install_hint
			die "the zookeeper package is installed but $debian_java_dir/zookeeper.jar is missing"
		}
	fi
	if ! java_bin >/dev/null; then
		if can_apt_install; then
			apt_install default-jre-headless
		fi
		java_bin >/dev/null || die "java not found: install it (apt-get install default-jre-headless) or set JAVA_HOME"
	fi
	printf '%s\n' "$home"
}

cmd_classpath() {
	find_classpath || {
		install_hint
		exit 1
	}
}

# four_letter PORT WORD sends a four-letter word to 127.0.0.1:PORT and
# prints the answer; it gives up after two seconds.
four_letter() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}

serving() {
	[[ $(four_letter "$1" ruok) == imok ]] && four_letter "$1" srvr | grep -qE '^Mode: (standalone|leader|follower|observer)'
}

# our_pid DIR prints the pid recorded in DIR if that process is still the
# server started there (a recycled pid belongs to someone else).
our_pid() {
	local dir=$1 pid
	[[ -f $dir/zookeeper.pid ]] || return 1
	pid=$(<"$dir/zookeeper.pid")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/zoo.cfg" || return 1
	printf '%s\n' "$pid"
}

cmd_start() {
	local dir=${1:-./.zk} port=${2:-2181} timeout=${ZK_START_TIMEOUT:-60}
	[[ $port =~ ^[0-9]+$ ]] || die "port must be a number, got $port"
	cmd_ensure >/dev/null
	local cp java pid
	cp=$(find_classpath)
	java=$(java_bin)
	mkdir -p "$dir/data"
	dir=$(cd "$dir" && pwd)

	if pid=$(our_pid "$dir"); then
		if serving "$port"; then
			log "already running (pid $pid) on 127.0.0.1:$port"
			printf '127.0.0.1:%s\n' "$port"
			return 0
		fi
		die "a server from $dir is running (pid $pid) but not serving on port $port; run: $0 stop $dir"
	fi
	if [[ -n $(four_letter "$port" ruok) ]]; then
		die "port $port is already taken by another ZooKeeper; pick another port"
	fi

	cat >"$dir/zoo.cfg" <<EOF
# Standalone ZooKeeper for local development; written by scripts/zookeeper.sh.
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
initLimit=20
syncLimit=10
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
standaloneEnabled=true
admin.enableServer=false
4lw.commands.whitelist=*
EOF
	cat >"$dir/log4j.properties" <<'EOF'
log4j.rootLogger=${zookeeper.root.logger}
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%c{1}] - %m%n
EOF
	cat >"$dir/logback.xml" <<'EOF'
<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread:%logger{0}] - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
EOF

	log "starting ZooKeeper on 127.0.0.1:$port with data in $dir"
	# shellcheck disable=SC2086 # ZK_JAVA_OPTS is a list of flags
	setsid "$java" -Xmx256m -XX:+UseSerialGC -XX:-UsePerfData -Djava.awt.headless=true \
		-Dzookeeper.log.dir="$dir" -Dzookeeper.root.logger=INFO,CONSOLE \
		-Dlog4j.configuration="file:$dir/log4j.properties" \
		-Dlogback.configurationFile="$dir/logback.xml" \
		${ZK_JAVA_OPTS:-} \
		-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		>>"$dir/zookeeper.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$dir/zookeeper.pid"

	local deadline=$((SECONDS + timeout))
	until serving "$port"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$dir/zookeeper.pid"
			tail -n 30 "$dir/zookeeper.log" >&2 || true
			die "ZooKeeper exited during startup; full log: $dir/zookeeper.log"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 30 "$dir/zookeeper.log" >&2 || true
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$dir/zookeeper.pid"
			die "ZooKeeper did not serve on 127.0.0.1:$port within ${timeout}s; full log: $dir/zookeeper.log"
		fi
		sleep 0.2
	done
	log "ZooKeeper is serving on 127.0.0.1:$port (pid $pid, log $dir/zookeeper.log)"
	printf '127.0.0.1:%s\n' "$port"
}

cmd_stop() {
	local dir=${1:-./.zk} pid i
	if [[ ! -d $dir ]]; then
		log "nothing to stop: $dir does not exist"
		return 0
	fi
	dir=$(cd "$dir" && pwd)
	if ! pid=$(our_pid "$dir"); then
		rm -f "$dir/zookeeper.pid"
		log "no ZooKeeper from $dir is running"
		return 0
	fi
	log "stopping ZooKeeper (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "still running after 10s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	kill -0 "$pid" 2>/dev/null && die "could not stop pid $pid"
	rm -f "$dir/zookeeper.pid"
	log "stopped"
}

case ${1:-} in
ensure) cmd_ensure ;;
classpath) cmd_classpath ;;
start)
	shift
	cmd_start "$@"
	;;
stop)
	shift
	cmd_stop "$@"
	;;
*) usage ;;
esac
