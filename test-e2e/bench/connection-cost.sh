#!/usr/bin/env bash
# What a new connection costs blocknode's server (test-e2e/bench/README.md, "Where a new connection's CPU goes"):
# two or more plugin jars side by side, each started with the image's flags (deploy/jvm.args, no AOT cache), called
# by figure g's Go client (kubeletclient/) in rounds that alternate between them: N Probes each on a new connection
# (dial, Probe, close: kubelet's pattern for an empty call) and N on one connection. Per jar and round: the plugin's
# CPU per call (utime + stime of the process, from /proc, around each batch) both ways, their difference (what the
# connection itself costs the server), and the client's median per call.
#
# usage: test-e2e/bench/connection-cost.sh JAR[@ARGSFILE]... (CONNCOST_N=2000 CONNCOST_ROUNDS=6)
#   JAR@ARGSFILE runs that plugin with the JVM flags of ARGSFILE instead of deploy/jvm.args (the same jar twice
#   with two flag sets compares the flags)
#   CONNCOST_JFR=1   also a JFR recording of each plugin (jdk.CPUTimeSample, 1 ms), left in the work dir
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
java_home=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}
n=${CONNCOST_N:-2000}
rounds=${CONNCOST_ROUNDS:-6}
[[ $# -ge 1 ]] || { echo "usage: $0 JAR..." >&2; exit 2; }

work=$(mktemp -d /tmp/blocknode-conncost.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n ${CONNCOST_JFR:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

(cd "$here/kubeletclient" && go build -o "$work/kubeletclient" .)
hz=$(getconf CLK_TCK)

for i in $(seq 1 $#); do
    spec=${!i}
    jar=$(realpath "${spec%%@*}")
    args=$repo/deploy/jvm.args
    [[ $spec != *@* ]] || args=$(realpath "${spec#*@}")
    d=$work/p$i
    mkdir -p "$d/kubelet" "$d/state"
    jfr=()
    [[ -z ${CONNCOST_JFR:-} ]] || jfr=("-XX:StartFlightRecording=filename=$d/rec.jfr,settings=profile,jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=1ms")
    "$java_home/bin/java" @"$args" "${jfr[@]}" -jar "$jar" --endpoint="unix://$d/csi.sock" \
        --node-id=conncost --driver-name=conncost.blocknode.dev --kubelet-root="$d/kubelet" --state-dir="$d/state" \
        --log-format=json --shutdown-grace=1s >"$d/log" 2>&1 &
    pids+=($!)
    echo "$jar with $args" >"$d/jar"
done
for i in $(seq 1 $#); do
    for _ in $(seq 100); do [[ -S $work/p$i/csi.sock ]] && break; sleep 0.1; done
    [[ -S $work/p$i/csi.sock ]] || { echo "plugin $i did not start: $(tail -3 "$work/p$i/log")" >&2; exit 1; }
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
median_us() { tr ' ' '\n' <"$1" | tail -n +2 | sort -n | awk '{a[NR] = $1} END {printf "%.0f", a[int((NR + 1) / 2)] / 1000}'; }

batch() { # MODE SOCKET: N Probes, their durations into $work/last
    "$work/kubeletclient" <<<"probe $1 $n $2" >"$work/last"
    grep -q '^ok' "$work/last" || { echo "the Go client: $(cat "$work/last")" >&2; exit 1; }
}

for i in $(seq 1 $#); do # warm-up: C1 compiles the connection's path
    batch per-op "$work/p$i/csi.sock"
    batch shared "$work/p$i/csi.sock"
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc); $n calls per batch, $rounds rounds"
printf '%-4s %-6s %22s %22s %18s %24s\n' jar round "per-conn CPU us/call" "shared CPU us/call" "conn CPU us" "client median us (per/sh)"
for r in $(seq 1 "$rounds"); do
    order=$(seq 1 $#)
    (( r % 2 == 0 )) && order=$(seq $# -1 1)
    for i in $order; do
        pid=${pids[$((i - 1))]}
        s=$work/p$i/csi.sock
        a=$(cpu_ticks "$pid"); batch per-op "$s"; b=$(cpu_ticks "$pid"); per=$(median_us "$work/last")
        batch shared "$s"; c=$(cpu_ticks "$pid"); sh=$(median_us "$work/last")
        awk -v i="$i" -v r="$r" -v a="$a" -v b="$b" -v c="$c" -v n="$n" -v hz="$hz" -v per="$per" -v sh="$sh" \
            'BEGIN {p = (b - a) * 1e6 / hz / n; s = (c - b) * 1e6 / hz / n;
                    printf "%-4s %-6s %22.0f %22.0f %18.0f %24s\n", i, r, p, s, p - s, per " / " sh}'
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 $#); do echo "jar $i: $(cat "$work/p$i/jar")"; done
[[ -z ${CONNCOST_JFR:-} ]] || echo "JFR recordings (after shutdown): $work/p*/rec.jfr"
