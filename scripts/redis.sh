#!/usr/bin/env bash
# redis.sh finds (and if need be installs) the Redis server, for the peer
# benchmarks in bench/ (gocron's and dcron's Redis backends), and runs a
# local server for trying things by hand.
#
#   bash scripts/redis.sh ensure              print redis-server's path; install it if missing
#   bash scripts/redis.sh start [DIR] [PORT]  start a server in the background (default ./.redis, 6379)
#   bash scripts/redis.sh stop [DIR]          stop the server started in DIR
#
# Where redis-server comes from, first match wins:
#   1. $REDIS_SERVER: the path of a redis-server binary.
#   2. redis-server in PATH (Debian's "redis-server" package puts it in /usr/bin).
#   3. If neither is there and we run as root on a machine with apt-get,
#      the Debian package is installed.
# The benchmark (bench/) looks redis-server up the same way and starts its
# own server on loopback; it does not use the one started here.
#
# The server started here listens on 127.0.0.1 only, keeps nothing on disk
# (no RDB snapshots, no append-only file) and writes only inside DIR: its
# log and pid file.
set -euo pipefail

prog=redis.sh

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,8s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

install_hint() {
	cat >&2 <<EOF
$prog: redis-server is not installed.
  On Debian/Ubuntu install it with:
      sudo apt-get update && sudo apt-get install -y redis-server
  or point REDIS_SERVER at a redis-server binary.
EOF
}

find_server() {
	if [[ -n ${REDIS_SERVER:-} ]]; then
		[[ -x $REDIS_SERVER ]] || {
			log "REDIS_SERVER=$REDIS_SERVER is not an executable file"
			return 1
		}
		printf '%s\n' "$REDIS_SERVER"
		return 0
	fi
	command -v redis-server
}

cmd_ensure() {
	local bin
	if ! bin=$(find_server); then
		if [[ -n ${REDIS_SERVER:-} ]] || ! can_apt_install; then
			install_hint
			exit 1
		fi
		apt_install --no-install-recommends redis-server
		bin=$(find_server) || {
			install_hint
			die "the redis-server package is installed but redis-server is not in PATH"
		}
	fi
	printf '%s\n' "$bin"
}

# ping PORT prints the start of the server's answer to PING, giving up after
# two seconds.
ping() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "PING\r\n" >&3 && head -c 7 <&3' _ "$1" 2>/dev/null || true
}

# our_pid DIR prints the pid recorded in DIR if that process is still a
# redis-server (a recycled pid belongs to someone else).
our_pid() {
	local dir=$1 pid
	[[ -f $dir/redis.pid ]] || return 1
	pid=$(<"$dir/redis.pid")
	[[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q redis-server || return 1
	printf '%s\n' "$pid"
}

cmd_start() {
	local dir=${1:-./.redis} port=${2:-6379} bin pid i
	[[ $port =~ ^[0-9]+$ ]] || die "port must be a number, got $port"
	bin=$(cmd_ensure)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if pid=$(our_pid "$dir"); then
		log "already running (pid $pid)"
		printf '127.0.0.1:%s\n' "$port"
		return 0
	fi
	[[ -z $(ping "$port") ]] || die "port $port is already taken; pick another port"
	"$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
		--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
	for ((i = 0; i < 100; i++)); do
		[[ $(ping "$port") == *PONG* ]] && break
		sleep 0.1
	done
	[[ $(ping "$port") == *PONG* ]] || die "redis-server did not answer on 127.0.0.1:$port within 10s; log: $dir/redis.log"
	log "Redis is serving on 127.0.0.1:$port (pid $(<"$dir/redis.pid"), log $dir/redis.log)"
	printf '127.0.0.1:%s\n' "$port"
}

cmd_stop() {
	local dir=${1:-./.redis} pid i
	if [[ ! -d $dir ]]; then
		log "nothing to stop: $dir does not exist"
		return 0
	fi
	dir=$(cd "$dir" && pwd)
	if ! pid=$(our_pid "$dir"); then
		log "no Redis from $dir is running"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "still running after 10s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/redis.pid"
	log "stopped"
}

case ${1:-} in
ensure) cmd_ensure ;;
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
