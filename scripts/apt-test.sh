#!/usr/bin/env bash
# make apt-test: scripts/apt.sh, through which every apt-get of the Makefile and the scripts runs, checked against
# real fcntl locks: it waits while one of dpkg's or apt's locks is held and names the holder, goes on when the lock
# is released, gives up with the holder's name after APT_LOCK_WAIT; a failed update is tried once more, an install
# or download that fails updates the lists and tries once more, an install blocks services and puts policy-rc.d
# back. The locks are taken by a python3 helper with fcntl, as dpkg and apt take them (not flock: apt would not
# see those). apt-get and apt-cache are stand-ins that record their calls, and the lock files live under a
# directory standing in for / (APT_SH_ROOT), so nothing here changes the host's packages; once, the real
# /var/lib/dpkg/lock-frontend is held for a second to show the real path is watched (skipped, saying so, when an
# apt or dpkg is running). Root: the real lock file is root's.
#
# usage: scripts/apt-test.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
apt_sh=$here/apt.sh
passed=0 failed=0

die() { echo "apt-test: $*" >&2; echo "apt-test: $passed passed, $((failed + 1)) failed"; exit 1; }
((EUID == 0)) || die "root is required (the real dpkg lock file is root's)"
command -v python3 >/dev/null || die "python3 is required (its fcntl takes the locks as dpkg does)"

work=$(mktemp -d /tmp/bn-apt-test.XXXXXX)
root=$work/root
stub=$work/stub
mkdir -p "$root/var/lib/dpkg" "$root/var/lib/apt/lists" "$root/var/cache/apt/archives" "$stub"
touch "$root/var/lib/dpkg/lock-frontend" "$root/var/lib/dpkg/lock" "$root/var/lib/apt/lists/lock" \
    "$root/var/cache/apt/archives/lock" "$root/var/lib/dpkg/status"

holder_pid=""
release() {
    [[ -n $holder_pid ]] || return 0
    kill "$holder_pid" 2>/dev/null
    wait "$holder_pid" 2>/dev/null
    holder_pid=""
}
trap 'release; rm -rf "$work"' EXIT

# hold FILE [ofd]: a python3 process takes an fcntl write lock on FILE (a classic one, as dpkg and apt take; or an
# open file description lock, which /proc/locks shows without a pid) and keeps it until release.
hold() {
    coproc HOLDER { exec python3 -c '
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
if sys.argv[2] == "ofd":
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
else:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
' "$1" "${2:-posix}"; }
    # shellcheck disable=SC2153 # HOLDER_PID: set by coproc
    holder_pid=$HOLDER_PID
    local line=""
    read -r -t 10 line <&"${HOLDER[0]}"
    [[ $line == locked ]] || die "the helper could not lock $1"
}

# The stand-ins: apt-get records each call (its verb, arguments, environment and what policy-rc.d answers), and
# fails its first STUB_FAIL_<VERB> calls; apt-cache answers Candidate: STUB_CANDIDATE (default 1.0).
cat >"$stub/apt-get" <<'EOF'
#!/usr/bin/env bash
verb=""
for a; do case $a in update | install | download) verb=$a; break ;; esac; done
policy=$("$APT_SH_ROOT/usr/sbin/policy-rc.d" iscsid start >/dev/null 2>&1; echo $?)
echo "$verb|$*|DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-} INITRD=${INITRD:-} policy=$policy" >>"$STUB_DIR/calls"
n=$(($(cat "$STUB_DIR/$verb.n" 2>/dev/null || echo 0) + 1))
echo "$n" >"$STUB_DIR/$verb.n"
fail=STUB_FAIL_${verb^^}
((n > ${!fail:-0})) || { echo "E: stand-in $verb failure $n" >&2; exit 100; }
[[ $verb != install ]] || echo "Setting up blocknode-apt-test-pkg (1.0) ..."
EOF
cat >"$stub/apt-cache" <<'EOF'
#!/usr/bin/env bash
echo "  Installed: (none)"
echo "  Candidate: ${STUB_CANDIDATE:-1.0}"
EOF
chmod 755 "$stub/apt-get" "$stub/apt-cache"

out=$work/out
# wrapper ARGS...: scripts/apt.sh with the stand-ins and the stand-in root, its output (both streams) in $out.
wrapper() {
    APT_SH_ROOT=$root APT_GET=$stub/apt-get APT_CACHE=$stub/apt-cache STUB_DIR=$stub APT_RETRY_PAUSE=0 \
        bash "$apt_sh" "$@" >"$out" 2>&1
}
fresh() { rm -f "$stub/calls" "$stub"/*.n "$out"; touch "$stub/calls"; }
verbs() { cut -d'|' -f1 "$stub/calls" | tr '\n' ' ' | sed 's/ $//'; }

check() { # NAME COMMAND...: one check, its result counted
    local name=$1; shift
    if "$@"; then
        passed=$((passed + 1)); echo "  ok    $name"
    else
        failed=$((failed + 1)); echo "  FAIL  $name"
        sed 's/^/          | /' "$out" 2>/dev/null
    fi
}
says() { grep -qF -- "$1" "$out"; }
# until_says TEXT SECONDS: polls the output for TEXT, up to SECONDS.
until_says() {
    local end=$((SECONDS + $2))
    until says "$1"; do
        ((SECONDS < end)) || return 1
        sleep 0.1
    done
}

echo "apt-test: the waits (locks under $root)"
fresh
wrapper wait
check "no lock held: no wait, nothing said" test "$?-$(wc -c <"$out")" = "0-0"

fresh
hold "$root/var/lib/dpkg/status"
wrapper wait
check "a lock on another file of the same directory is not the dpkg lock" test "$?-$(wc -c <"$out")" = "0-0"
release

fresh
hold "$root/var/lib/dpkg/lock-frontend"
APT_LOCK_WAIT=30 wrapper update &
run=$!
check "held frontend lock: says so, naming the holder" until_says "waiting for the dpkg lock ($root/var/lib/dpkg/lock-frontend), held by pid $holder_pid (python3)" 10
sleep 2 # the lock is held for two seconds more: the wrapper must still be waiting at the end of them
check "held frontend lock: apt-get not run while it is held" test "$(kill -0 "$run" 2>/dev/null && echo waiting)-$(verbs)" = "waiting-"
release
wait "$run"
check "released: goes on, once" test "$?-$(verbs)" = "0-update"
check "released: says it goes on" says "the dpkg lock is free now; going on"
timeout=$(grep -o 'DPkg::Lock::Timeout=[0-9]*' "$stub/calls" | cut -d= -f2)
check "apt-get gets the rest of the bound as DPkg::Lock::Timeout (${timeout:-none} of 30 s)" \
    test "${timeout:-99}" -le 28 -a "${timeout:-0}" -ge 20

fresh
hold "$root/var/lib/dpkg/lock-frontend"
started=$SECONDS
APT_LOCK_WAIT=2 wrapper install blocknode-apt-test-pkg
rc=$?
check "bounded: gives up after APT_LOCK_WAIT=2 s with exit 75, apt-get never run" \
    test "$rc-$(verbs)-$((SECONDS - started >= 2))" = "75--1"
check "bounded: the message names the lock, the holder and what to do" \
    says "gave up after 2 s waiting for the dpkg lock ($root/var/lib/dpkg/lock-frontend), held by pid $holder_pid (python3). Let it finish"
check "bounded: an install given up leaves no policy-rc.d behind" test ! -e "$root/usr/sbin/policy-rc.d"
release

for lock in var/lib/dpkg/lock:"the dpkg lock" var/lib/apt/lists/lock:"apt's package-list lock" \
    var/cache/apt/archives/lock:"apt's download lock"; do
    fresh
    hold "$root/${lock%%:*}"
    APT_LOCK_WAIT=1 wrapper wait
    check "held /${lock%%:*}: gives up naming it and pid $holder_pid" \
        test "$?-$(says "${lock#*:} ($root/${lock%%:*}), held by pid $holder_pid (python3)" && echo named)" = "75-named"
    release
done

fresh
hold "$root/var/lib/dpkg/lock-frontend" ofd
APT_LOCK_WAIT=1 wrapper wait
check "an open file description lock (no pid in /proc/locks): the process with the file open is named" \
    test "$?-$(says "held by pid $holder_pid (python3)" && echo named)" = "75-named"
release

echo "apt-test: the retries and the install (apt-get and apt-cache stand-ins)"
fresh
STUB_FAIL_UPDATE=1 wrapper update
check "update fails once: tried once more, succeeds" test "$?-$(verbs)" = "0-update update"
fresh
STUB_FAIL_UPDATE=5 wrapper update
check "update fails twice: gives up after the second try" test "$?-$(verbs)" = "1-update update"
check "update fails twice: says so, with apt's last lines" says "E: stand-in update failure 2"
# kept_log: the log scripts/apt.sh kept after a failure and named (the test removes it).
kept_log() { grep -o '/tmp/blocknode-apt\.[A-Za-z0-9]*\.log' "$out" | head -n1; }
rm -f "$(kept_log)"

fresh
STUB_FAIL_INSTALL=1 wrapper install blocknode-apt-test-pkg
check "install fails on stale lists: one update, one more install" test "$?-$(verbs)" = "0-install update install"
check "install: noninteractive, INITRD=No, no recommends, confold" \
    grep -q -- "-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold blocknode-apt-test-pkg|DEBIAN_FRONTEND=noninteractive INITRD=No" "$stub/calls"
check "install: services blocked (policy-rc.d answers 101) during each apt-get" \
    test "$(grep -c 'policy=101$' "$stub/calls")" = 3
check "install: the temporary policy-rc.d removed afterwards" test ! -e "$root/usr/sbin/policy-rc.d"
check "install: says what it set up" says "1 packages set up"

fresh
STUB_CANDIDATE="(none)" wrapper install blocknode-apt-test-pkg
check "install of a package the lists lack: update first" test "$?-$(verbs)" = "0-update install"

fresh
STUB_FAIL_INSTALL=5 wrapper install blocknode-apt-test-pkg
rc=$?
kept=$(kept_log)
check "install fails twice: exit non-zero, the log kept and named" test "$rc-$([[ -s $kept ]] && echo kept)" = "1-kept"
check "install fails twice: policy-rc.d removed all the same" test ! -e "$root/usr/sbin/policy-rc.d"
rm -f "$kept"

fresh
mkdir -p "$root/usr/sbin"
printf '#!/bin/sh\n# the host own\nexit 0\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
wrapper install --recommends blocknode-apt-test-pkg
check "install: the host's own policy-rc.d replaced for the install, put back after" \
    test "$?-$(grep -c 'policy=101$' "$stub/calls")-$(grep -c 'the host own' "$root/usr/sbin/policy-rc.d")" = "0-1-1"
check "install --recommends: no --no-install-recommends" test "$(grep -c -- --no-install-recommends "$stub/calls")" = 0
rm -f "$root/usr/sbin/policy-rc.d"

fresh
wrapper install bash
check "install of what dpkg lists as installed: no apt-get at all" test "$?-$(verbs)" = "0-"
fresh
wrapper ensure sh:blocknode-never-this "$root/var/lib/dpkg/status:blocknode-nor-this" \
    blocknode-no-such-tool:blocknode-apt-test-pkg "$root/no/such/file:blocknode-apt-test-pkg"
check "ensure: only the missing tools' packages, each once" \
    test "$?-$(verbs)-$(grep -c ' blocknode-apt-test-pkg|' "$stub/calls")" = "0-install-1"

fresh
STUB_FAIL_DOWNLOAD=1 wrapper download blocknode-apt-test-pkg=1.0
check "download fails: one update, one more download" test "$?-$(verbs)" = "0-download update download"

echo "apt-test: the real /var/lib/dpkg/lock-frontend"
busy=""
for name in apt apt-get aptitude dpkg unattended-upgr packagekitd; do
    busy+=$(pgrep -a -x "$name" | head -n1)
done
if [[ -z $busy ]] && ! APT_LOCK_WAIT=0 bash "$apt_sh" wait >/dev/null 2>&1; then
    busy="a held apt or dpkg lock"
fi
if [[ -n $busy ]]; then
    echo "  skip  apt or dpkg is running here ($busy): the real lock is not taken"
else
    hold /var/lib/dpkg/lock-frontend
    APT_LOCK_WAIT=20 bash "$apt_sh" wait >"$out" 2>&1 &
    run=$!
    check "the real frontend lock held: waits, naming the holder" \
        until_says "waiting for the dpkg lock (/var/lib/dpkg/lock-frontend), held by pid $holder_pid (python3)" 10
    release
    wait "$run"
    check "the real frontend lock released: goes on" test "$?" = 0
fi

echo "apt-test: $passed passed, $failed failed"
((failed == 0))
