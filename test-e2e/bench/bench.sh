#!/usr/bin/env bash
# blocknode's benchmark: builds its two small pieces (bnbench.c, the Java client in src/), makes the AOT
# cache the container image makes (deploy/aot-training.sh), runs dev.blocknode.bench.Bench, and cleans up
# whatever the run created on every exit path. See README.md in this directory.
#
# usage: test-e2e/bench/bench.sh [PLUGIN_JAR]      (root; JAVA_HOME = the JDK to run the plugin with)
# environment (all optional; the defaults are the figures of README.md):
#   BENCH_CYCLES=400 BENCH_ROUNDS=8 BENCH_CLUTTER=3000 BENCH_BURST=100 BENCH_STATS_VOLUMES=1000
#   BENCH_SWEEPS=5 BENCH_START_TRIALS=5 BENCH_IDLE_SETTLE_MS=2000
#   BENCH_FIGURES=abcdefgkl    a subset, e.g. "d" (b stages its own volume without a; e's burst RSS needs c)
#   BENCH_P1_EXTRA_FLAGS=...   extra JVM flags for the plugin of a-d only, e.g. a JFR recording for a profile
#                              (the table then says so: those runs are not the image's flags)
#   BENCH_PROFILE=1            JFR recordings (settings=profile) of the plugin over the measured windows of a
#                              and d, into test-e2e/target/bench/profile/ (then: jfr view hot-methods FILE)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
out=$repo/test-e2e/target/bench
java_home=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}
java=$java_home/bin/java
jvm_args=$repo/deploy/jvm.args
training=$repo/deploy/aot-training.sh

die() { echo "bench: $*" >&2; exit 2; }
[[ $EUID -eq 0 ]] || die "must run as root: it attaches loop devices and mounts filesystems"
[[ -f $jar ]] || die "no plugin jar at $jar; run make build first"
[[ -x $java && -x $java_home/bin/javac ]] || die "no JDK at $java_home (set JAVA_HOME)"
for tool in gcc mkfs.ext4 blkid findmnt losetup mount umount; do
    command -v "$tool" >/dev/null || die "$tool is required (apt-get install gcc e2fsprogs util-linux mount)"
done
jdk_feature=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$java_home/release")

# ------------------------------------------------------------------------------------- work dir and trap

# Short: socket paths must stay under 108 bytes.
work=$(mktemp -d /tmp/bn-bench.XXXXXX)
pids=$work/pids
: >"$pids"
training_pid=
bench_pid=

# Takes off everything the run made, in order: processes (only the ones this run started, by pid, and only
# if they still run with this work dir in their command line), mounts under the work dir (deepest first),
# loop devices backed by files under it, then the directory. Then checks that nothing is left.
cleanup() {
    local rc=$? leftover=0
    trap - EXIT INT TERM HUP
    set +e
    if [[ -n $bench_pid ]] && kill -0 "$bench_pid" 2>/dev/null; then
        kill -TERM "$bench_pid" 2>/dev/null
        wait "$bench_pid" 2>/dev/null
    fi
    if [[ -n $training_pid ]] && kill -0 "$training_pid" 2>/dev/null; then
        kill -TERM -- "-$training_pid" 2>/dev/null # its own process group (setsid)
        sleep 1
        kill -KILL -- "-$training_pid" 2>/dev/null
    fi
    local pid
    for pid in $(sort -u "$pids" 2>/dev/null); do
        if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work"; then
            kill -TERM "$pid" 2>/dev/null
            for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
        fi
    done
    local mounts
    mounts=$(findmnt -rn -o TARGET | grep -F "$work/" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-)
    if [[ -n $mounts ]]; then
        echo "bench: cleanup: unmounting $(wc -l <<<"$mounts") mounts left under $work" >&2
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done <<<"$mounts"
    fi
    local loops
    loops=$(losetup -a | grep -F "($work/" | cut -d: -f1)
    if [[ -n $loops ]]; then
        echo "bench: cleanup: detaching $(wc -l <<<"$loops") loop devices left" >&2
        for l in $loops; do losetup -d "$l"; done
    fi
    # The check: nothing of this run may be left.
    if findmnt -rn -o TARGET | grep -qF "$work"; then
        echo "bench: CLEANUP CHECK FAILED: mounts left: $(findmnt -rn -o TARGET | grep -F "$work" | head -5)" >&2
        leftover=1
    fi
    sleep 0.2 # a detached loop device leaves losetup -a a moment later
    if losetup -a | grep -qF "$work"; then
        echo "bench: CLEANUP CHECK FAILED: loop devices left: $(losetup -a | grep -F "$work" | head -5)" >&2
        leftover=1
    fi
    for pid in $(sort -u "$pids" 2>/dev/null); do
        if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$work"; then
            echo "bench: CLEANUP CHECK FAILED: process $pid still runs" >&2
            leftover=1
        fi
    done
    # The plugins' logs outlive the work dir, for a failed run's post-mortem.
    rm -rf "$out/logs"
    mkdir -p "$out/logs"
    local log
    for log in "$work"/*/plugin.log; do
        [[ -f $log ]] && cp "$log" "$out/logs/$(basename "$(dirname "$log")").log"
    done
    local check
    if ((leftover == 0)); then
        rm -rf --one-file-system "$work"
        check="Cleanup check (findmnt, losetup -a, processes): nothing of this run is left (work dir $work removed)."
    else
        check="Cleanup check: FAILED, see the messages above; $work kept for inspection."
        rc=1
    fi
    echo "bench: $check" >&2
    [[ -f $out/results.md ]] && printf '\n%s\n' "$check" >>"$out/results.md"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ------------------------------------------------------------------------------------------------ build

mkdir -p "$out/classes"
rm -f "$out/results.md"
gcc -O2 -Wall -Wextra -Werror -o "$out/bnbench" "$here/bnbench.c"
"$java_home/bin/javac" --release 21 -Xlint:all,-processing -d "$out/classes" -cp "$jar" \
    $(find "$here/src" -name '*.java') $(grep -v '^#' "$here/fakes.list" | sed "s|^|$repo/|")

# The image's AOT cache (JDK >= 25), made exactly as deploy/Containerfile makes it; remade when the jar,
# the flags or the training script change. The training run gets its own process group and temp dir
# under the work dir, so the trap can stop and remove it if it fails half-way.
aot=
if ((jdk_feature >= 25)); then
    aot=$out/blocknode.aot
    # Which jar the cache was made from (its checksum): JDK 25 maps a cache made from another jar without a
    # word, and the classes it holds then meet the other jar's (a NoSuchMethodError at the first call that
    # crosses them), so a cache is reused only with the very jar it was made from.
    jar_id=$(sha256sum <"$jar" | cut -d' ' -f1)
    if [[ ! -s $aot || $aot -ot $jvm_args || $aot -ot $training || "$(cat "$aot.jar" 2>/dev/null)" != "$jar_id" ]]; then
        echo "bench: making the AOT cache (training run of deploy/aot-training.sh)" >&2
        rm -f "$aot" "$aot.jar"
        mkdir -p "$work/aot-tmp"
        TMPDIR=$work/aot-tmp PATH=$java_home/bin:$PATH setsid bash "$training" "$jar" "$aot" "$jvm_args" \
            >"$out/aot-training.log" 2>&1 &
        training_pid=$!
        wait "$training_pid" || die "the AOT training run failed; see $out/aot-training.log"
        training_pid=
        printf '%s\n' "$jar_id" >"$aot.jar"
    fi
    # The image runs without -XX:AOTMode=on (an unusable cache is only a warning); here it must be used.
    "$java" @"$jvm_args" -XX:AOTCache="$aot" -XX:AOTMode=on -jar "$jar" --help >/dev/null 2>"$out/aot-check.log" \
        || die "the AOT cache $aot is not usable with these flags and jar; see $out/aot-check.log"
else
    echo "bench: JDK $jdk_feature < 25: no AOT cache (the image's JDK 25 feature); figure (e) runs deploy/jvm.args alone" >&2
fi

# ---------------------------------------------------------------------------------------------------- run

# Figure g's baseline: csi-driver-host-path's hostpathplugin, the sha256-checked upstream build (or one from the
# Go module proxy where ../shared/tools is absent). Without it, g is reported as not run.
# Its client: grpc-go as kubelet's (kubeletclient/, from the module cache or the Go module proxy).
reference=
kubelet_client=
if [[ ${BENCH_FIGURES:-abcdefgkl} == *g* ]]; then
    reference=$("$repo/test-e2e/sidecars/get.sh" hostpathplugin 2>"$out/reference.log") ||
        { echo "bench: no reference driver for figure g (see $out/reference.log)" >&2; reference=; }
    command -v go >/dev/null || die "figure g needs go for its client (apt-get install golang-go, or make deps)"
    (cd "$here/kubeletclient" && go build -o "$out/kubeletclient" .)
    kubelet_client=$out/kubeletclient
fi

# In the background, so that a signal reaches the trap at once (bash defers traps while a foreground
# command runs); the trap stops it.
"$java" --enable-native-access=ALL-UNNAMED -cp "$jar:$out/classes" dev.blocknode.bench.Bench \
    --jar "$jar" --work "$work" --helper "$out/bnbench" --jvm-args "$jvm_args" --aot-cache "$aot" \
    --results "$out/results.md" --pid-file "$pids" --classes "$out/classes" \
    --cycles "${BENCH_CYCLES:-400}" --rounds "${BENCH_ROUNDS:-8}" --clutter "${BENCH_CLUTTER:-3000}" \
    --burst "${BENCH_BURST:-100}" --stats-volumes "${BENCH_STATS_VOLUMES:-1000}" --sweeps "${BENCH_SWEEPS:-5}" \
    --start-trials "${BENCH_START_TRIALS:-5}" --idle-settle-ms "${BENCH_IDLE_SETTLE_MS:-2000}" \
    --figures "${BENCH_FIGURES:-abcdefgkl}" --p1-extra-flags "${BENCH_P1_EXTRA_FLAGS:-}" --reference "$reference" \
    --kubelet-client "$kubelet_client" \
    --profile-dir "$( [[ -n ${BENCH_PROFILE:-} ]] && echo "$out/profile" )" &
bench_pid=$!
wait "$bench_pid"
