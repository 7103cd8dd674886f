#!/usr/bin/env bash
# postgresql.sh finds (and if need be installs) PostgreSQL's server binaries
# for the dispatcher's tests, benchmark and example (internal/testing/pgtest runs a
# throwaway server from them; nothing is configured system-wide).
#
#   bash scripts/postgresql.sh ensure    print the binaries' directory; install PostgreSQL if missing
#
# Where PostgreSQL comes from, first match wins:
#   1. $PG_BIN: a directory holding initdb and postgres.
#   2. Debian's layout: the newest /usr/lib/postgresql/*/bin.
#   3. If neither is there and we run as root on a machine with apt-get,
#      Debian's "postgresql" package is installed (its default cluster, if
#      the package creates one, is left alone; the tests start their own).
# The Go helper internal/testing/pgtest looks PostgreSQL up the same way.
set -euo pipefail

prog=postgresql.sh

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,6s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

install_hint() {
	cat >&2 <<EOF
$prog: PostgreSQL is not installed.
  On Debian/Ubuntu install it with:
      sudo apt-get update && sudo apt-get install -y postgresql
  or point PG_BIN at a directory holding initdb and postgres.
EOF
}

# find_bin prints the directory of initdb and postgres, or fails.
find_bin() {
	if [[ -n ${PG_BIN:-} ]]; then
		if [[ -x $PG_BIN/postgres && -x $PG_BIN/initdb ]]; then
			(cd "$PG_BIN" && pwd)
			return 0
		fi
		log "PG_BIN=$PG_BIN holds no initdb and postgres"
		return 1
	fi
	local d best="" v bestv=-1
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/postgres && -x $d/initdb ]] || continue
		v=$(basename "$(dirname "$d")")
		[[ $v =~ ^[0-9]+$ ]] || v=0
		if ((v > bestv)); then
			best=$d
			bestv=$v
		fi
	done
	[[ -n $best ]] || return 1
	printf '%s\n' "$best"
}

cmd_ensure() {
	local bin
	if ! bin=$(find_bin); then
		if [[ -n ${PG_BIN:-} ]] || ! can_apt_install; then
			install_hint
			exit 1
		fi
		apt_install postgresql
		bin=$(find_bin) || {
			install_hint
			die "the postgresql package is installed but no /usr/lib/postgresql/*/bin/postgres was found"
		}
	fi
	# As root the tests run the server as an unprivileged user (internal/testing/pgtest).
	if [[ $(id -u) -eq 0 ]] && ! id "${PG_USER:-nobody}" >/dev/null 2>&1; then
		die "running as root, the tests need the unprivileged user ${PG_USER:-nobody} to run PostgreSQL as"
	fi
	printf '%s\n' "$bin"
}

case ${1:-} in
ensure) cmd_ensure ;;
*) usage ;;
esac
