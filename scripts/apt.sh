#!/usr/bin/env bash
# The one way the Makefile and the scripts run apt-get and apt-cache on this host (make deps, make test-deps, the
# tiers' own setup, the image and release scripts). Two things a fresh machine does that CI's warm one does not:
# an unattended upgrade (or another apt) holds the dpkg lock for minutes after boot, and the package lists are
# missing or older than the mirror. So before each apt-get this waits, bounded, while one of apt's and dpkg's locks
# is held, saying who holds it; a failed `apt-get update` is tried once more; an install or download whose package
# has no candidate updates the lists first, and one that fails updates them and tries once more.
#
# usage: scripts/apt.sh install [--recommends] PKG...    the PKGs dpkg does not list as installed; no services
#                                                        started (policy-rc.d), INITRD=No, confold
#        scripts/apt.sh ensure [--recommends] TOOL:PKG... install PKG of each TOOL missing (a command, or a file
#                                                        when TOOL starts with /)
#        scripts/apt.sh download PKG[=VERSION]...        the .debs into the current directory, not installed
#        scripts/apt.sh candidate PKG                    the version apt would install (updates the lists if none)
#        scripts/apt.sh update                           the package lists
#        scripts/apt.sh wait                             only wait for the locks
#
# apt-get's own output goes to a log under /tmp, shown (its last lines) and kept only when it fails.
# APT_LOCK_WAIT  seconds to wait for a lock before giving up (default 600)
# Test-only (scripts/apt-test.sh): APT_SH_ROOT, a directory standing for / where the locks, policy-rc.d and this
# script's own lock are looked for; APT_GET and APT_CACHE, the commands run as apt-get and apt-cache;
# APT_RETRY_PAUSE, the seconds between a failed update and its retry (default 5).
set -euo pipefail

root=${APT_SH_ROOT:-}
apt_get=${APT_GET:-apt-get}
apt_cache=${APT_CACHE:-apt-cache}
wait_limit=${APT_LOCK_WAIT:-600}
retry_pause=${APT_RETRY_PAUSE:-5}
[[ $wait_limit =~ ^[0-9]+$ ]] || { echo "apt: APT_LOCK_WAIT=$wait_limit is not a number of seconds" >&2; exit 2; }

# The locks apt-get and dpkg take (fcntl write locks), and what each one guards, for the messages.
LOCKS=(
    "$root/var/lib/dpkg/lock-frontend:the dpkg lock"
    "$root/var/lib/dpkg/lock:the dpkg lock"
    "$root/var/lib/apt/lists/lock:apt's package-list lock"
    "$root/var/cache/apt/archives/lock:apt's download lock"
)

say() { echo "apt: $*" >&2; }

# holder FILE [KIND]: "pid N (comm)" of a process holding an fcntl lock (classic or open file description; KIND
# FLOCK: a flock) on FILE, by its device and inode in /proc/locks; nothing when FILE is not locked. An OFD lock, or one taken in another pid
# namespace, shows no usable pid there: then whoever has FILE open is named.
holder() {
    local file=$1 kinds=${2:-POSIX OFDLCK} dev ino id pid fd
    dev=$(stat -Lc %d "$file" 2>/dev/null) || return 0
    ino=$(stat -Lc %i "$file")
    id=$(printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
    # Fields: "N: POSIX|OFDLCK|FLOCK ADVISORY WRITE|READ PID MAJ:MIN:INODE START END"; a waiter has "->" after N:.
    pid=$(awk -v id="$id" -v kinds=" $kinds " \
        '$2 != "->" && index(kinds, " " $2 " ") && $6 == id { print $5; exit }' /proc/locks)
    [[ -n $pid ]] || return 0
    if ((pid <= 0)); then
        for fd in /proc/[0-9]*/fd/*; do
            [[ $(readlink "$fd" 2>/dev/null) == "$file" ]] || continue
            pid=${fd#/proc/}; pid=${pid%%/*}
            break
        done
    fi
    if ((pid > 0)); then
        echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo "gone"))"
    else
        echo "a process this namespace cannot see"
    fi
}

# wait_for_locks: returns once none of LOCKS is held, having said who held one; exits after wait_limit seconds.
# Sets `remaining`, the seconds of the bound left, which apt-get gets as DPkg::Lock::Timeout: a lock taken between
# this check and apt-get's own is then waited for by apt-get instead of failing it.
wait_for_locks() {
    local deadline=$((SECONDS + wait_limit)) next_note=0 entry file what who last="" last_what=""
    while :; do
        who=""
        for entry in "${LOCKS[@]}"; do
            file=${entry%%:*}; what=${entry#*:}
            who=$(holder "$file")
            [[ -n $who ]] && break
        done
        remaining=$((deadline - SECONDS))
        ((remaining < 0)) && remaining=0
        if [[ -z $who ]]; then
            [[ -n $last ]] && say "$last_what is free now; going on"
            return 0
        fi
        if ((remaining == 0)); then
            say "gave up after ${wait_limit} s waiting for $what ($file), held by $who." \
                "Let it finish (after boot, usually an unattended upgrade: 'systemctl stop unattended-upgrades' ends it" \
                "cleanly), or see what it is with 'ps -fp ${who#pid }' and stop it; then run this again." \
                "APT_LOCK_WAIT=SECONDS waits longer."
            exit 75
        fi
        if [[ "$file $who" != "$last" ]]; then
            say "waiting for $what ($file), held by $who; up to ${remaining} s more (APT_LOCK_WAIT)"
            last="$file $who"; last_what=$what; next_note=$((SECONDS + 30))
        elif ((SECONDS >= next_note)); then
            say "still waiting for $what, held by $who: $((wait_limit - remaining)) s so far, ${remaining} s left"
            next_note=$((SECONDS + 30))
        fi
        sleep 1
    done
}

log=""
new_log() { [[ -n $log ]] || log=$(mktemp /tmp/blocknode-apt.XXXXXX.log); }
# failed WHAT: the end of apt's output, and where the rest is.
failed() {
    say "$1; its last lines (all of them: $log):"
    tail -n 15 "$log" | sed 's/^/    /' >&2
}

# run_apt ARGS...: apt-get after the wait, non-interactive, its output appended to the log.
run_apt() {
    wait_for_locks
    new_log
    (
        # The install turn's descriptor is not handed down: a daemon apt's scripts left running would hold it.
        [[ -z ${turn_fd:-} ]] || exec {turn_fd}>&-
        DEBIAN_FRONTEND=noninteractive INITRD=No exec "$apt_get" -o DPkg::Lock::Timeout="$remaining" "$@"
    ) >>"$log" 2>&1
}

# update: the package lists, tried once more after a pause when it fails (a mirror's hiccup, or a lock taken in
# the race apt-get's own timeout does not cover: the lists lock).
update() {
    run_apt update -q && return 0
    failed "apt-get update failed; trying once more in ${retry_pause} s"
    sleep "$retry_pause"
    run_apt update -q && return 0
    failed "apt-get update failed twice"
    return 1
}

# has_candidate PKG[=VERSION]: apt's lists know the package.
has_candidate() {
    local candidate
    candidate=$("$apt_cache" policy "${1%%=*}" 2>/dev/null | awk '/Candidate:/ { print $2 }')
    [[ -n $candidate && $candidate != "(none)" ]]
}

# with_lists VERB ARGS...: run the apt-get VERB over the packages in ARGS (its last arguments); update first when a
# package has no candidate in the lists, or when the first try fails (stale lists naming files the mirror no
# longer has), then once more. Never more than one update.
with_lists() {
    local verb=$1 pkg; shift
    wait_for_locks # the lists are not read while an update rewrites them
    for pkg in "${packages[@]}"; do
        if ! has_candidate "$pkg"; then
            say "the package lists lack $pkg: apt-get update first"
            update || say "going on with the lists as they are"
            run_apt "$verb" "$@" && return 0
            failed "apt-get $verb failed"
            return 1
        fi
    done
    run_apt "$verb" "$@" && return 0
    say "apt-get $verb failed with the current package lists; apt-get update and once more"
    update || say "going on with the lists as they are"
    run_apt "$verb" "$@" && return 0
    failed "apt-get $verb failed"
    return 1
}

# An install never starts services on this host: policy-rc.d exiting 101 tells invoke-rc.d and deb-systemd-invoke
# not to. The host's is used when it already says so; otherwise ours stands in for the install and whatever was
# there is put back (also on failure or interrupt). Two installs by this script take turns (flock), so that one
# never puts the policy back while the other is installing.
policy=$root/usr/sbin/policy-rc.d
policy_saved=""
restore_policy() {
    [[ -n $policy_saved ]] || return 0
    if [[ $policy_saved == none ]]; then rm -f "$policy"; else mv -f "$policy_saved" "$policy"; fi
    policy_saved=""
}
block_services() {
    local rc=0 turn=$root/run/lock/blocknode-apt.lock
    mkdir -p "${turn%/*}"
    exec {turn_fd}>"$turn"
    if ! flock -n "$turn_fd"; then
        say "waiting for another scripts/apt.sh install to finish ($turn, held by $(holder "$turn" FLOCK))"
        flock -w "$wait_limit" "$turn_fd" || { say "gave up after ${wait_limit} s waiting for it ($turn)"; exit 75; }
    fi
    [[ -x $policy ]] && { "$policy" blocknode start >/dev/null 2>&1 || rc=$?; }
    ((rc == 101)) && return 0
    if [[ -e $policy ]]; then
        policy_saved=$(mktemp "$policy.blocknode.XXXXXX"); mv -f "$policy" "$policy_saved"
    else
        mkdir -p "${policy%/*}"; policy_saved=none
    fi
    trap restore_policy EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    printf '#!/bin/sh\n# temporary, from blocknode scripts/apt.sh: start no services\nexit 101\n' >"$policy"
    chmod 755 "$policy"
}

# Options: --recommends installs the packages' recommendations too (make deps does; the rest do not).
recommends=(--no-install-recommends)
parse_packages() {
    packages=()
    [[ ${1:-} == --recommends ]] && { recommends=(); shift; }
    packages=("$@")
}

install_missing() {
    local missing=() pkg status started=$SECONDS
    for pkg in "${packages[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    packages=("${missing[@]}")
    say "installing ${missing[*]}"
    block_services
    with_lists install -y -q "${recommends[@]}" -o Dpkg::Options::=--force-confdef \
        -o Dpkg::Options::=--force-confold "${missing[@]}" || exit 1
    restore_policy
    say "$(grep -c '^Setting up' "$log" || true) packages set up in $((SECONDS - started)) s"
    rm -f "$log"
}

ensure_tools() {
    local pair tool wanted=()
    for pair in "${packages[@]}"; do
        tool=${pair%%:*}
        if [[ $tool == /* ]]; then
            [[ -e $tool ]] && continue
        else
            command -v "$tool" >/dev/null 2>&1 && continue
        fi
        wanted+=("${pair#*:}")
    done
    ((${#wanted[@]})) || return 0
    mapfile -t packages < <(printf '%s\n' "${wanted[@]}" | sort -u)
    install_missing
}

cmd=${1:-}
(($#)) && shift
case $cmd in
    install | ensure)
        parse_packages "$@"
        ((${#packages[@]})) || { say "usage: scripts/apt.sh $cmd [--recommends] PKG..."; exit 2; }
        if [[ $cmd == install ]]; then install_missing; else ensure_tools; fi ;;
    download)
        packages=("$@")
        ((${#packages[@]})) || { say "usage: scripts/apt.sh download PKG[=VERSION]..."; exit 2; }
        # As root into a directory apt's sandbox user may not write: say so to apt instead of being warned.
        with_lists download -q -o APT::Sandbox::User=root "${packages[@]}" || exit 1
        rm -f "$log" ;;
    candidate)
        (($# == 1)) || { say "usage: scripts/apt.sh candidate PKG"; exit 2; }
        wait_for_locks
        if ! has_candidate "$1"; then
            say "the package lists lack $1: apt-get update first"
            update || exit 1
            rm -f "$log"
        fi
        "$apt_cache" policy "$1" | awk '/Candidate:/ { print $2 }' | grep -vx '(none)' ||
            { say "no Debian package $1 in the lists, even after apt-get update"; exit 1; } ;;
    update)
        update || exit 1
        rm -f "$log" ;;
    wait)
        wait_for_locks ;;
    *)
        say "usage: scripts/apt.sh install|ensure|download|candidate|update|wait ... (see its header)"
        exit 2 ;;
esac
