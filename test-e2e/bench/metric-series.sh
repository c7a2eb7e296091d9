#!/usr/bin/env bash
# How many Prometheus series one node's plugin exports, against its volumes (docs/design/scale.md, "Metric series").
# The plugin runs with the image's JVM flags (deploy/jvm.args) and --metrics-address on loopback; first the calls a
# registered, idle node gets (Probe, GetPluginInfo, NodeGetInfo, NodeGetCapabilities), then loop-backed volumes
# (the local transport), half ext4 filesystems and half raw block, staged and published through its socket at
# kubelet's paths and each asked for its stats once, as kubelet would. /metrics is scraped at each count of
# SERIES_COUNTS and its samples counted (the lines not starting with '#': one a series), in all and by family;
# last, one call that fails (the stats of a volume that is not there), for what a new (method, code) pair adds.
# The volumes are then unpublished and unstaged through the plugin; the trap stops the plugin, unmounts and detaches
# whatever is left under the work dir and checks that nothing is. With Go and python3, also what kubelet's stats
# call costs the plugin's CPU (below). Root; about 5 minutes for 50 volumes on a busy 2-CPU machine (each call is a
# `blocknode client` JVM of its own).
#
# usage: sudo bash test-e2e/bench/metric-series.sh [JAR]    (JAR: java/target/blocknode.jar)
#   SERIES_COUNTS="0 10 50"     the volume counts scraped at, ascending
#   SERIES_STATS_CALLS=2000     kubelet-pattern stats calls timed (0: none)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
jar=$(realpath "${1:-$repo/java/target/blocknode.jar}")
counts=(${SERIES_COUNTS:-0 10 50})
java=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}/bin/java
[[ $EUID -eq 0 ]] || { echo "metric-series: must run as root (loop devices, mounts)" >&2; exit 2; }
[[ -f $jar ]] || { echo "metric-series: no jar at $jar (make build)" >&2; exit 2; }
for tool in curl losetup findmnt truncate; do
    command -v "$tool" >/dev/null || { echo "metric-series: $tool is required" >&2; exit 2; }
done

work=$(mktemp -d /tmp/bn-series.XXXXXX)
kubelet=$work/kubelet
driver=series.blocknode.dev
plugin_pid=""
cleanup() {
    trap - EXIT INT TERM
    if [[ -n $plugin_pid ]] && kill -0 "$plugin_pid" 2>/dev/null; then
        kill -TERM "$plugin_pid"
        for _ in $(seq 100); do kill -0 "$plugin_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$plugin_pid" 2>/dev/null && kill -KILL "$plugin_pid"
    fi
    local m l
    for m in $(findmnt -rn -o TARGET | grep -F "$work/" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-); do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    for l in $(losetup -a | grep -F "($work/" | cut -d: -f1); do losetup -d "$l"; done
    sleep 0.2 # a detached loop device leaves losetup -a a moment later
    if findmnt -rn -o TARGET | grep -qF "$work/" || losetup -a | grep -qF "($work/"; then
        echo "metric-series: CLEANUP CHECK FAILED: mounts or loop devices left under $work" >&2
        exit 1
    fi
    rm -rf "$work"
    echo "metric-series: cleanup check: no mount, loop device or process of this run is left"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A free port on loopback for the metrics endpoint.
port=$(( 20000 + RANDOM % 20000 ))
while curl -s -o /dev/null "http://127.0.0.1:$port/"; do port=$(( port + 1 )); done

mkdir -p "$kubelet" "$work/state" "$work/images"
"$java" @"$repo/deploy/jvm.args" -jar "$jar" --endpoint="unix://$work/csi.sock" --node-id=series-node \
    --driver-name="$driver" --kubelet-root="$kubelet" --state-dir="$work/state" \
    --metrics-address="127.0.0.1:$port" --log-format=json --shutdown-grace=10s >"$work/plugin.log" 2>&1 &
plugin_pid=$!

# One CSI call through `blocknode client` (its JVM shares a class data archive made by the first call).
call() {
    "$java" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+AutoCreateSharedArchive \
        -XX:SharedArchiveFile="$work/client.jsa" -Xlog:disable -jar "$jar" client \
        --endpoint "unix://$work/csi.sock" "$@" >/dev/null
}
for _ in $(seq 300); do
    [[ -S $work/csi.sock ]] && curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break
    kill -0 "$plugin_pid" 2>/dev/null || { cat "$work/plugin.log" >&2; exit 1; }
    sleep 0.1
done
for rpc in Probe GetPluginInfo NodeGetInfo NodeGetCapabilities; do call "$rpc"; done

access='access_mode { mode: SINGLE_NODE_MULTI_WRITER }'
# Volume i: a 16 MiB sparse file on a loop device; even i an ext4 filesystem, odd i raw block.
add_volume() {
    local i=$1 id="pv-series-$1" file dev staging target capability
    file=$work/images/$id.img
    truncate -s 16M "$file"
    dev=$(losetup --find --show "$file")
    if (( i % 2 == 0 )); then
        staging=$kubelet/plugins/kubernetes.io/csi/$driver/$id/globalmount
        target=$kubelet/pods/pod-$id/volumes/kubernetes.io~csi/$id/mount
        capability="volume_capability { mount { fs_type: \"ext4\" } $access }"
    else
        staging=$kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/$id
        target=$kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/$id/pod-$id
        capability="volume_capability { block { } $access }"
        mkdir -p "$staging"
    fi
    mkdir -p "$(dirname "$staging")" "$(dirname "$target")"
    call NodeStageVolume "volume_id: \"$id\" staging_target_path: \"$staging\" $capability
        volume_context { key: \"devicePath\" value: \"$dev\" }"
    call NodePublishVolume "volume_id: \"$id\" staging_target_path: \"$staging\" target_path: \"$target\" $capability"
    call NodeGetVolumeStats "volume_id: \"$id\" volume_path: \"$target\""
    echo "$id $staging $target" >>"$work/volumes"
}

# The samples of one scrape, by family (a histogram's _bucket, _count and _sum are its family's).
scrape() {
    curl -sf "http://127.0.0.1:$port/metrics" | grep -v '^#' >"$work/scrape-$1"
}
families() {
    sed -E 's/[{ ].*//; s/_(bucket|count|sum)$//' "$work/scrape-$1" | sort | uniq -c | awk '{ print $2, $1 }'
}
# Lines, and distinct label sets of the given labels, of one family in one scrape.
pairs() {
    { grep -E "^$2(_bucket|_count|_sum)?\{" "$work/scrape-$1" || true; } \
        | { grep -oE "$3=\"[^\"]*\".*$4=\"[^\"]*\"" || true; } | sort -u | wc -l
}
lines() { # with the histograms' _max gauges
    grep -cE "^$2(_bucket|_count|_sum|_max)?\{" "$work/scrape-$1" || true
}

staged=0
touch "$work/volumes"
labels=()
for n in "${counts[@]}"; do
    while (( staged < n )); do add_volume "$staged"; staged=$(( staged + 1 )); done
    scrape "n$n"
    labels+=("n$n")
done
call NodeGetVolumeStats 'volume_id: "pv-series-missing" volume_path: "'"$kubelet"'/pods/none/volumes/kubernetes.io~csi/pv-series-missing/mount"' \
    2>/dev/null || true # NOT_FOUND, as asked
scrape error
labels+=(error)

echo "# blocknode metric series: $(date -u +%Y-%m-%dT%H:%MZ), $(basename "$jar"), $(nproc) CPUs, $("$java" -version 2>&1 | head -1)"
echo
printf '| scrape | series (samples) | with a volume_id label | blocknode_rpc_seconds (method, code pairs) | blocknode_phase_seconds (phase, outcome pairs) | blocknode_rpc_errors_total | jvm_* and process_* | other blocknode_* |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for s in "${labels[@]}"; do
    total=$(wc -l <"$work/scrape-$s")
    vol=$(grep -c 'volume_id="' "$work/scrape-$s" || true)
    rpc=$(lines "$s" blocknode_rpc_seconds); rpc_p=$(pairs "$s" blocknode_rpc_seconds code method)
    ph=$(lines "$s" blocknode_phase_seconds); ph_p=$(pairs "$s" blocknode_phase_seconds outcome phase)
    err=$(lines "$s" blocknode_rpc_errors_total)
    jvm=$(grep -cE '^(jvm|process)_' "$work/scrape-$s" || true)
    other=$(( total - vol - rpc - ph - err - jvm ))
    printf '| %s | %d | %d | %d (%d) | %d (%d) | %d | %d | %d |\n' "$s" "$total" "$vol" "$rpc" "$rpc_p" "$ph" "$ph_p" \
        "$err" "$jvm" "$other"
done
echo
echo "(a histogram's columns count its buckets, _count, _sum and its _max gauge)"
echo
echo "Series by family:"
echo
{
    printf 'family'; for s in "${labels[@]}"; do printf ' %s' "$s"; done; echo
    join_all=$(mktemp "$work/join.XXXXXX")
    families "${labels[0]}" >"$join_all"
    for s in "${labels[@]:1}"; do
        families "$s" | join -a1 -a2 -e0 -o auto "$join_all" - >"$join_all.next"
        mv "$join_all.next" "$join_all"
    done
    cat "$join_all"
} | column -t
# The fit: series = fixed + per volume x volumes + per pair x (method, code) and (phase, outcome) pairs + errors.
last=n${counts[-1]}
rpc_pairs=$(pairs "$last" blocknode_rpc_seconds code method)
phase_pairs=$(pairs "$last" blocknode_phase_seconds outcome phase)
per_pair=$(( (rpc_pairs + phase_pairs) > 0 ? ($(lines "$last" blocknode_rpc_seconds) + $(lines "$last" blocknode_phase_seconds)) \
    / (rpc_pairs + phase_pairs) : 0 ))
fixed=$(( $(wc -l <"$work/scrape-$last") - $(grep -c 'volume_id="' "$work/scrape-$last" || true) - per_pair * (rpc_pairs + phase_pairs) ))
echo
echo "Fit at $last: $fixed fixed + $(( ${counts[-1]} > 0 ? $(grep -c 'volume_id="' "$work/scrape-$last" || true) / ${counts[-1]} : 0 ))" \
    "per volume x ${counts[-1]} + $per_pair per (method, code) or (phase, outcome) pair x $(( rpc_pairs + phase_pairs ))" \
    "(histogram buckets, _count, _sum and the _max gauge)"
if (( ${#counts[@]} >= 2 )); then
    prev=n${counts[-2]}
    if [[ $(pairs "$prev" blocknode_rpc_seconds code method) == "$rpc_pairs" \
          && $(pairs "$prev" blocknode_phase_seconds outcome phase) == "$phase_pairs" ]]; then
        echo "From $prev to $last (the same pairs): $(awk -v a="$(wc -l <"$work/scrape-$prev")" \
            -v b="$(wc -l <"$work/scrape-$last")" -v n="$(( ${counts[-1]} - ${counts[-2]} ))" \
            'BEGIN { printf "%.2f", (b - a) / n }') series per volume added"
    fi
fi
echo "The failed call added $(( $(wc -l <"$work/scrape-error") - $(wc -l <"$work/scrape-$last") )) series: its new" \
    "(method, code) pair, and blocknode_rpc_errors_total's (method, reason)"
echo
echo "(method, code) pairs at $last: $(grep -oE '^blocknode_rpc_seconds_count\{[^}]*' "$work/scrape-$last" | sed 's/.*{//' | tr '\n' ' ')"
echo "(phase, outcome) pairs at $last: $(grep -oE '^blocknode_phase_seconds_count\{[^}]*' "$work/scrape-$last" | sed 's/.*{//' | tr '\n' ' ')"

# What kubelet's stats call costs the plugin (docs/design/scale.md, "kubelet's work"): figure g's Go client in its
# kubelet mode (a NodeGetCapabilities, then the NodeGetVolumeStats, each on a connection of its own) over the first
# filesystem volume, SERIES_STATS_CALLS times; the plugin's CPU (utime + stime) over the batch, less its idle rate
# over as long a window just after. Probes on new connections beside it. Needs Go and python3 (the requests'
# encoding); SERIES_STATS_CALLS=0 skips it.
stats_calls=${SERIES_STATS_CALLS:-2000}
if (( stats_calls > 0 && ${counts[-1]} > 0 )) && command -v go >/dev/null && command -v python3 >/dev/null; then
    (cd "$here/kubeletclient" && go build -o "$work/kubeletclient" .)
    read -r id staging target <"$work/volumes"
    b64() { python3 -c 'import base64, sys; print(base64.b64encode(sys.stdin.buffer.read()).decode())'; }
    # The requests in protobuf's encoding (field numbers from proto/csi: NodePublishVolumeRequest 1, 3, 4, 5;
    # VolumeCapability mount 2, access_mode 3 with SINGLE_NODE_MULTI_WRITER = 7; the stats and unpublish requests 1, 2).
    proto() {
        python3 - "$@" <<'PY'
import sys
def f(n, b): return bytes([(n << 3) | 2]) + varint(len(b)) + b
def varint(v):
    out = b""
    while True:
        if v < 0x80: return out + bytes([v])
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
kind, vid, staging, target = sys.argv[1], *(a.encode() for a in sys.argv[2:])
cap = f(2, f(1, b"ext4")) + f(3, bytes([0x08, 7]))
msg = {"publish": f(1, vid) + f(3, staging) + f(4, target) + f(5, cap),
       "stats": f(1, vid) + f(2, target), "unpublish": f(1, vid) + f(2, target)}[kind]
sys.stdout.buffer.write(msg)
PY
    }
    requests="$(proto publish "$id" "$staging" "$target" | b64) $(proto stats "$id" "$staging" "$target" | b64) $(proto unpublish "$id" "$staging" "$target" | b64)"
    ticks() { awk '{ print $14 + $15 }' "/proc/$plugin_pid/stat"; }
    hz=$(getconf CLK_TCK)
    cpu_per_call() { # OP N [REQUESTS]: microseconds of the plugin's CPU a call, less its idle rate
        local t0 c0 t1 c1 idle start end answer
        t0=$(date +%s%N); c0=$(ticks)
        answer=$(echo "$1 kubelet $2 $work/csi.sock ${3:-}" | "$work/kubeletclient")
        t1=$(date +%s%N); c1=$(ticks)
        [[ $answer == ok* ]] || { echo "metric-series: kubeletclient: $answer" >&2; return 1; }
        start=$(ticks); sleep "$(awk -v ns=$(( t1 - t0 )) 'BEGIN { printf "%.2f", ns / 1e9 }')"; end=$(ticks)
        awk -v c=$(( c1 - c0 )) -v idle=$(( end - start )) -v n="$2" -v hz="$hz" -v ns=$(( t1 - t0 )) \
            'BEGIN { printf "%.0f us of CPU a call (%d calls in %.1f s; idle over as long: %d ticks)", (c - idle) * 1e6 / hz / n, n, ns / 1e9, idle }'
    }
    # Warm-up: the plugin's C1 compiles the connection's and the call's paths.
    echo "probe kubelet 1000 $work/csi.sock" | "$work/kubeletclient" >/dev/null
    echo "stats kubelet 1000 $work/csi.sock $requests" | "$work/kubeletclient" >/dev/null
    echo
    echo "kubelet's stats call (NodeGetCapabilities + NodeGetVolumeStats, a new connection each): $(cpu_per_call stats "$stats_calls" "$requests")"
    echo "Probe on a new connection, for comparison: $(cpu_per_call probe "$stats_calls")"
fi

# Unpublish and unstage every volume through the plugin, then detach its loop device.
while read -r id staging target; do
    call NodeUnpublishVolume "volume_id: \"$id\" target_path: \"$target\""
    call NodeUnstageVolume "volume_id: \"$id\" staging_target_path: \"$staging\""
done <"$work/volumes"
scrape after
echo
echo "After all were unpublished and unstaged: $(wc -l <"$work/scrape-after") series, $(grep -c 'volume_id="' \
    "$work/scrape-after" || true) with a volume_id label, $(pairs after blocknode_rpc_seconds code method) (method, code)" \
    "and $(pairs after blocknode_phase_seconds outcome phase) (phase, outcome) pairs:" \
    "$(grep -oE '^blocknode_phase_seconds_count\{[^}]*' "$work/scrape-after" | sed 's/.*{//' | tr '\n' ' ')"
for l in $(losetup -a | grep -F "($work/" | cut -d: -f1); do losetup -d "$l"; done
