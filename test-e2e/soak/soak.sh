#!/usr/bin/env bash
# blocknode's soak (make soak; not part of make test): SOAK_CYCLES lifecycle cycles of loop volumes against
# the plugin over its socket, sampling the plugin's open fds, threads and RSS. Compiles the bench's Java
# harness (test-e2e/bench/src: plugin process, loop volumes) with Soak.java, and bench's bnbench.c for loop
# devices; cleans up whatever the run created on every exit path. See README.md in this directory.
#
# usage: test-e2e/soak/soak.sh [PLUGIN_JAR]      (root; JAVA_HOME = the JDK to run the plugin with)
# environment: SOAK_CYCLES=10000 SOAK_VOLUMES_PER_KIND=3 SOAK_THREADS=4 SOAK_SEED=42 SOAK_SAMPLES=50
#              SOAK_PLUGIN_FLAGS= (extra JVM flags for the plugin, e.g. -XX:NativeMemoryTracking=summary)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
out=$repo/test-e2e/target/soak
java_home=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}

die() { echo "soak: $*" >&2; exit 2; }
[[ $EUID -eq 0 ]] || die "must run as root: it attaches loop devices and mounts filesystems"
[[ -f $jar ]] || die "no plugin jar at $jar; run make build first"
[[ -x $java_home/bin/javac ]] || die "no JDK at $java_home (set JAVA_HOME)"
for tool in gcc mkfs.ext4 mkfs.xfs blkid findmnt losetup; do
    command -v "$tool" >/dev/null || die "$tool is required (apt-get install gcc e2fsprogs xfsprogs util-linux)"
done

# Short: socket paths must stay under 108 bytes.
work=$(mktemp -d /tmp/bn-soak.XXXXXX)
pids=$work/pids
: >"$pids"
soak_pid=

# Processes this run started (by pid, only while their command line names the work dir), then mounts under
# the work dir (deepest first), then loop devices backed by its files; then checks nothing is left.
cleanup() {
    local rc=$? leftover=0 pid
    trap - EXIT INT TERM HUP
    set +e
    if [[ -n $soak_pid ]] && kill -0 "$soak_pid" 2>/dev/null; then
        kill -TERM "$soak_pid"; wait "$soak_pid" 2>/dev/null
    fi
    for pid in $(sort -u "$pids" 2>/dev/null); do
        if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work"; then
            kill -TERM "$pid"
            for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        fi
    done
    findmnt -rn -o TARGET | grep -F "$work/" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2- |
        while read -r m; do echo "soak: cleanup: unmounting $m" >&2; umount "$m" || umount -l "$m"; done
    for l in $(losetup -a | grep -F "($work/" | cut -d: -f1); do
        echo "soak: cleanup: detaching $l" >&2; losetup -d "$l"
    done
    sleep 0.2 # a detached loop device leaves losetup -a a moment later
    if findmnt -rn -o TARGET | grep -qF "$work" || losetup -a | grep -qF "$work"; then
        echo "soak: CLEANUP CHECK FAILED: mounts or loop devices left under $work (kept for inspection)" >&2
        leftover=1
    fi
    mkdir -p "$out"
    [[ -f $work/soak/plugin.log ]] && cp "$work/soak/plugin.log" "$out/plugin.log"
    if ((leftover == 0)); then
        rm -rf --one-file-system "$work"
        echo "soak: cleanup check (findmnt, losetup -a): nothing of this run is left" >&2
    else
        rc=1
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mkdir -p "$out/classes"
gcc -O2 -Wall -Wextra -Werror -o "$out/bnbench" "$repo/test-e2e/bench/bnbench.c"
"$java_home/bin/javac" --release 21 -Xlint:all,-processing -d "$out/classes" -cp "$jar" \
    $(find "$repo/test-e2e/bench/src" "$here/src" -name '*.java')

# In the background, so that a signal reaches the trap at once.
"$java_home/bin/java" --enable-native-access=ALL-UNNAMED -cp "$jar:$out/classes" dev.blocknode.bench.Soak \
    --jar "$jar" --work "$work" --helper "$out/bnbench" --jvm-args "$repo/deploy/jvm.args" --pid-file "$pids" \
    --results "$out/results.md" --cycles "${SOAK_CYCLES:-10000}" --volumes-per-kind "${SOAK_VOLUMES_PER_KIND:-3}" \
    --threads "${SOAK_THREADS:-4}" --seed "${SOAK_SEED:-42}" --samples "${SOAK_SAMPLES:-50}" \
    --plugin-flags "${SOAK_PLUGIN_FLAGS:-}" &
soak_pid=$!
wait "$soak_pid"
