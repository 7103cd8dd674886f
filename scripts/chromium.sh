#!/usr/bin/env bash
# chromium.sh finds (and if need be installs) Chromium for the console's
# browser tests (jobhttp, driven headless through chromedp).
#
#   bash scripts/chromium.sh ensure    print the chromium binary's path; install it if missing
#
# Where Chromium comes from, first match wins:
#   1. $SHARDJOB_CHROMIUM: the path of a chromium (or chrome) binary.
#   2. chromium, chromium-browser, google-chrome on PATH.
#   3. If none is there and we run as root on a machine with apt-get,
#      Debian's "chromium" package is installed.
# The tests look Chromium up the same way (jobhttp/browser_test.go).
set -euo pipefail

prog=chromium.sh

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,5s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

install_hint() {
	cat >&2 <<EOF
$prog: Chromium is not installed.
  On Debian install it with:
      sudo apt-get update && sudo apt-get install -y chromium
  or point SHARDJOB_CHROMIUM at a chromium or chrome binary.
EOF
}

# find_bin prints the browser's path, or fails.
find_bin() {
	if [[ -n ${SHARDJOB_CHROMIUM:-} ]]; then
		if [[ -x $SHARDJOB_CHROMIUM ]]; then
			printf '%s\n' "$SHARDJOB_CHROMIUM"
			return 0
		fi
		log "SHARDJOB_CHROMIUM=$SHARDJOB_CHROMIUM is not an executable"
		return 1
	fi
	local name
	for name in chromium chromium-browser google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

cmd_ensure() {
	local bin
	if ! bin=$(find_bin); then
		if [[ -n ${SHARDJOB_CHROMIUM:-} ]] || ! can_apt_install; then
			install_hint
			exit 1
		fi
		apt_install chromium
		bin=$(find_bin) || {
			install_hint
			die "the chromium package is installed but no chromium binary is on PATH"
		}
	fi
	printf '%s\n' "$bin"
}

case ${1:-} in
ensure) cmd_ensure ;;
*) usage ;;
esac
