# lib.sh: what the scripts that find or install a server share. Source it
# after setting prog (the script's name, for messages).

log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() {
	log "$*"
	exit 1
}

can_apt_install() {
	[[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1
}

# apt_install [APT-OPTION...] PKG... installs Debian packages quietly; on
# failure it shows apt-get's output.
apt_install() {
	local out
	out=$(mktemp)
	log "installing $* with apt-get (this can take a minute)"
	if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; } >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		die "apt-get install $* failed"
	fi
	rm -f "$out"
}
