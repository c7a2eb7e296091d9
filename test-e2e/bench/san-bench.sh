#!/usr/bin/env bash
# make bench-san: figure h (README.md, "Figure h: N LUNs x 2 paths in the VM tier"). Boots one qemu guest
# that runs guest/san-bench.sh for each N of SAN_N, then writes test-e2e/target/bench/san-results.md: the
# conditions (host load before and after, CPU, guest size), one row per N, the plugin's figures beside
# the target alone (its baseline, measured in the same boot just before), and the exponent of the cost
# per volume against N.
#
#   SAN_N="25 50 100" make bench-san      (root; the plugin's jar built)
#
# Everything the guest makes lives in its tmpfs overlay and dies with it; the scenario itself checks that
# the node is clean after each drain, and e2e.sh that no qemu of this run is left.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$REPO/test-e2e/target/bench
mkdir -p "$OUT"
export GUEST_SAN_N=${SAN_N:-25 50 100 200} GUEST_SAN_BASELINE=yes
# 16 MiB LUNs are sparse files in the guest's tmpfs; ext4 on each writes ~1 MiB. The JVMs and 2N disks'
# udev work need the rest: 2 GiB holds N = 200.
export VM_MEMORY=${VM_MEMORY:-2048}
largest=$(tr ' ' '\n' <<<"$GUEST_SAN_N" | sort -n | tail -n 1)
total=$(( $(echo $GUEST_SAN_N | tr ' ' '+') ))
# Generous bounds, scaled to the volumes (TCG: seconds per volume, the target included): a hang still ends.
export GUEST_SCENARIO_TIMEOUT=${GUEST_SCENARIO_TIMEOUT:-$((600 + 12 * total))}
export VM_TIMEOUT=${VM_TIMEOUT:-$((GUEST_SCENARIO_TIMEOUT + 300))}
export GUEST_CSI_TIMEOUT=${GUEST_CSI_TIMEOUT:-$((240 + 3 * largest))}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
guests_before=$(pgrep -c -f '^qemu-system-x86_64' || true)
rc=0
VM_QUIET=1 bash "$REPO/test-e2e/vm/e2e.sh" san:san-bench || rc=$?
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
results=${VM_WORK:-$REPO/test-e2e/target/vm}/results/san/san-bench

{
  echo "# blocknode SAN benchmark (figure h), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Host: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r);" \
       "load average $load_before before, $load_after after; $guests_before qemu guest(s) running at the start."
  echo "Guest: TCG, ${VM_CPUS:-2} vCPUs, $VM_MEMORY MiB; tgtd target on the guest's loopback, two portals; LUNs of" \
       "${GUEST_SAN_LUN_MB:-16} MiB, ext4; the plugin with the guest's JVM flags (C1, serial GC, AOT cache) and then deploy/jvm.args (the image's heap and metaspace caps)."
  echo
  echo "| N | target alone up / down (ms) | stage all (ms) | stage p50/p90/p99 (ms) | publish all (ms) | stats sweep (ms) | unpublish all (ms) | unstage all (ms) | unstage p50/p90/p99 (ms) | stage all / target up | peak RSS (MiB) | CPU (s) | CPU per volume (ms) | uevents stage / rest | commands per volume, stage | commands per volume, drain |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  grep -h '^SANBENCH' "$results/san-bench.txt" 2>/dev/null | sed 's/^SANBENCH //' | awk '
    function per(list, n,   out, parts, i, kv) {
      out = ""; split(list, parts, ",")
      for (i in parts) if (split(parts[i], kv, "=") == 2) out = out sprintf("%s %.1f ", kv[1], kv[2] / n)
      return out
    }
    {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
      n = f["n"]
      printf "| %d | %d / %d | %d | %s | %d | %d | %d | %d | %s | %.2fx | %.0f | %.1f | %.0f | %d / %d | %s | %s |\n", n,
        f["target_up_ms"], f["target_down_ms"], f["stage_all_ms"], f["stage_p50_p90_p99"], f["publish_all_ms"],
        f["sweep_ms"], f["unpublish_all_ms"], f["unstage_all_ms"], f["unstage_p50_p90_p99"],
        f["stage_all_ms"] / (f["target_up_ms"] > 0 ? f["target_up_ms"] : 1), f["peak_rss_kib"] / 1024,
        f["cpu_ms"] / 1000, f["cpu_ms"] / n, f["uevents_stage"], f["uevents_rest"],
        per(f["stage_commands"], n), per(f["drain_commands"], n)
      # Least squares of log(time) on log(N): time ~ N^b, so the cost per volume goes as N^(b - 1).
      lx = log(n); sx += lx; sxx += lx * lx; c++
      split("stage_all_ms unstage_all_ms cpu_ms target_up_ms", keys, " ")
      for (k in keys) { ly = log(f[keys[k]] > 0 ? f[keys[k]] : 1); sy[keys[k]] += ly; sxy[keys[k]] += lx * ly }
    }
    END {
      if (c < 2) { print "\n(one N only: no exponent)"; exit }
      printf "\nCost per volume against N, as N^e (least squares over the rows):"
      for (k in keys) {
        b = (c * sxy[keys[k]] - sx * sy[keys[k]]) / (c * sxx - sx * sx)
        printf " %s e = %.2f;", keys[k], b - 1
      }
      print ""
    }'
  echo
  echo "Boot: VM_QUIET=1 test-e2e/vm/e2e.sh san:san-bench, exit $rc; the scenario's log: $results/console.log."
  echo "Leftovers after each drain (sessions, disks, maps, mounts, node and staging records): $(
    grep -q 'drained-.*FAILED' "$results/console.log" 2>/dev/null && echo FOUND ||
    { grep -c 'step drained-.* ok' "$results/console.log" 2>/dev/null | sed 's/$/ drain(s) checked, none/'; })"
} > "$OUT/san-results.md"
cat "$OUT/san-results.md"
exit "$rc"
