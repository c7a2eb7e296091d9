#!/usr/bin/env bash
# Figure h's results file from a san-bench boot's SANBENCH lines (san-bench.sh runs it; alone, it re-renders
# a finished run):
#
#   san-report.sh RESULTS_DIR EXIT_STATUS "LOAD BEFORE" "LOAD AFTER" GUESTS_BEFORE > san-results.md
#
# One row per plugin jar and N, and per jar the exponent e of the cost per volume against N (time ~ N^(1+e),
# least squares over its rows: 0 is flat).
set -euo pipefail
results=$1 rc=$2 load_before=$3 load_after=$4 guests_before=$5
VM_MEMORY=${VM_MEMORY:-2048}
  echo "# blocknode SAN benchmark (figures h and i), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "Host: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r);" \
     "load average $load_before before, $load_after after; $guests_before qemu guest(s) running at the start."
echo "Guest: TCG, ${VM_CPUS:-2} vCPUs, $VM_MEMORY MiB; tgtd target on the guest's loopback, two portals; LUNs of" \
     "${GUEST_SAN_LUN_MB:-16} MiB, ext4; the plugin with the guest's JVM flags (C1, serial GC, AOT cache) and then deploy/jvm.args (the image's heap and metaspace caps)."
echo
if grep -q '^SANBENCH' "$results/san-bench.txt" 2>/dev/null; then
echo "| plugin | N | target alone up / down (ms) | stage all (ms; stages kubelet would have called again) | stage p50/p90/p99 (ms) | publish all (ms) | stats sweep (ms) | unpublish all (ms) | unstage all (ms) | unstage p50/p90/p99 (ms) | stage all / target up | peak RSS (MiB) | CPU (s) | CPU per volume (ms) | uevents stage / rest | commands per volume, stage | commands per volume, drain | outage of every path: held (s), all failed after / all active again after the target resumed (ms) | maps whole after the stage burst |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
grep -h '^SANBENCH' "$results/san-bench.txt" | sed 's/^SANBENCH //' | awk '
  function per(list, n,   out, parts, i, kv) {
    out = ""; split(list, parts, ",")
    for (i in parts) if (split(parts[i], kv, "=") == 2) out = out sprintf("%s %.1f ", kv[1], kv[2] / n)
    return out
  }
  {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
    n = f["n"]; j = f["jar"]; jars[j] = 1
    printf "| %s | %d | %d / %d | %s | %s | %d | %d | %d | %d | %s | %.2fx | %.0f | %.1f | %.0f | %d / %d | %s | %s | %s | %s |\n", j, n,
      f["target_up_ms"], f["target_down_ms"],
      f["stage_all_ms"] (f["stage_retries"] > 0 ? " (" f["stage_retries"] " again)" : ""), f["stage_p50_p90_p99"], f["publish_all_ms"],
      f["sweep_ms"], f["unpublish_all_ms"], f["unstage_all_ms"], f["unstage_p50_p90_p99"],
      f["stage_all_ms"] / (f["target_up_ms"] > 0 ? f["target_up_ms"] : 1), f["peak_rss_kib"] / 1024,
      f["cpu_ms"] / 1000, f["cpu_ms"] / n, f["uevents_stage"], f["uevents_rest"],
      per(f["stage_commands"], n), per(f["drain_commands"], n),
      (f["outage_s"] > 0 ? sprintf("%d: %d / %d", f["outage_s"], f["outage_failed_ms"], f["outage_recovered_ms"]) : "-"),
      (f["maps_whole"] == "" ? "yes" : f["maps_whole"])
    # Least squares of log(time) on log(N): time ~ N^b, so the cost per volume goes as N^(b - 1).
    lx = log(n); sx[j] += lx; sxx[j] += lx * lx; c[j]++
    split("stage_all_ms unstage_all_ms cpu_ms target_up_ms", keys, " ")
    for (k in keys) { ly = log(f[keys[k]] > 0 ? f[keys[k]] : 1); sy[j, keys[k]] += ly; sxy[j, keys[k]] += lx * ly }
  }
  END {
    for (j in jars) {
      if (c[j] < 2) { printf "\n%s: one N only, no exponent\n", j; continue }
      printf "\n%s: cost per volume against N, as N^e (least squares over its rows):", j
      for (k in keys) {
        b = (c[j] * sxy[j, keys[k]] - sx[j] * sy[j, keys[k]]) / (c[j] * sxx[j] - sx[j] * sx[j])
        printf " %s e = %.2f;", keys[k], b - 1
      }
      print ""
    }
  }'
  # The repair loop's cost with healthy volumes (README.md, "Figure h"): idle CPU with none and with N published.
  if grep -q '^SANBENCH.* idle_s=' "$results/san-bench.txt"; then
    echo
    echo "Repair loop, idle (README.md, \"Figure h\"): the plugin's CPU over an idle window with no volume and with the N published,"
    echo "the loop at the bench's interval; per volume and pass = the difference / (N x window / interval). The loop's own: its"
    echo "thread's CPU (blocknode_path_repair_cpu_seconds_total) over the volumes its passes looked at in the window with N published."
    echo
    echo "| plugin | N | window (s) | interval (s) | CPU, no volume (ms) | CPU, N published (ms) | per volume and pass (us) | share of one core, 100 volumes at the default 30 s | loop's own: CPU with N, without (us) / looks | loop's own per look (us) | loop's own share, 100 volumes at 30 s |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    grep -h '^SANBENCH.* idle_s=' "$results/san-bench.txt" | sed 's/^SANBENCH //' | awk '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
      printf "| %s | %d | %d | %d | %d | %d | %d | %s %% | %d, %d / %d | %d | %s %% |\n", f["jar"], f["n"], f["idle_s"],
        f["repair_interval_s"], f["idle_base_ms"], f["idle_n_ms"], f["volume_pass_us"], f["core_share_100_at_30s_pct"],
        f["loop_cpu_us"], f["loop_base_cpu_us"], f["loop_looks"], f["loop_us_per_look"], f["loop_share_100_at_30s_pct"]
    }'
  fi
else
  echo "Figure h: not run (SAN_N empty)."
fi
# Figure i: blocknode beside Dell's gobrick on the same LUNs, each side's per-volume durations pooled over its
# rounds (the guest's SANPEER summary lines), and the ratios blocknode / gobrick (below 1: blocknode faster).
if grep -q '^SANPEER kind=summary' "$results/san-bench.txt" 2>/dev/null; then
  echo
  echo "Figure i: the same N LUNs x 2 paths attached and detached all at once by blocknode (NodeStageVolume /" \
       "NodeUnstageVolume, block volumes) and by Dell's gobrick $(sed -n 's/^require github.com\/dell\/gobrick //p; s/^\tgithub.com\/dell\/gobrick //p' "$(dirname "${BASH_SOURCE[0]}")/gobrick-attach/go.mod" | head -n 1)" \
       "(ConnectVolume / DisconnectVolumeByDeviceName, one goroutine per volume, $( [[ -n ${GUEST_SAN_PEER_ARGS:-} ]] &&
         echo "harness flags $GUEST_SAN_PEER_ARGS" || echo "its defaults as Dell's drivers run it: at most 5 operations in flight"))," \
       "rounds rotating which goes first; per-volume p50/p90/p99 pooled over the rounds, totals the median round's." \
       "The target alone (with SAN_BASELINE=yes, in the same rounds: logins with the kernel's full scan, multipathd's maps from" \
       "the uevents, the teardown by hand) is what bounds both sides in this guest: it has totals only."
  echo
  echo "| N | rounds | side | attach all (ms) | attach p50/p90/p99 (ms) | detach all (ms) | detach p50/p90/p99 (ms) |"
  echo "|---|---|---|---|---|---|---|"
  grep -h '^SANPEER kind=summary' "$results/san-bench.txt" | sed 's/^SANPEER //' | awk '
    function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "-" }
    {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
      rounds = f["rounds"] (f["failed_rounds"] > 0 ? " (" f["failed_rounds"] " failed, left out)" : "")
      printf "| %d | %s | %s | %s | %s | %s | %s |\n", f["n"], rounds, f["side"], f["attach_all_ms"],
        f["attach_p50_p90_p99"], f["detach_all_ms"], f["detach_p50_p90_p99"]
      n = f["n"]; s = f["side"]; ns[n] = 1
      aa[n, s] = f["attach_all_ms"]; da[n, s] = f["detach_all_ms"]
      split(f["attach_p50_p90_p99"], ap, "/"); split(f["detach_p50_p90_p99"], dp, "/")
      a50[n, s] = ap[1]; a99[n, s] = ap[3]; d50[n, s] = dp[1]; d99[n, s] = dp[3]
    }
    END {
      # The ratio rows in the order of N.
      k = 0; for (n in ns) order[++k] = n + 0
      for (i = 2; i <= k; i++) for (j = i; j > 1 && order[j - 1] > order[j]; j--) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
      for (i = 1; i <= k; i++) {
        n = order[i]
        printf "| %d | | blocknode / gobrick | %s | p50 %s, p99 %s | %s | p50 %s, p99 %s |\n", n,
          ratio(aa[n, "blocknode"], aa[n, "gobrick"]), ratio(a50[n, "blocknode"], a50[n, "gobrick"]),
          ratio(a99[n, "blocknode"], a99[n, "gobrick"]), ratio(da[n, "blocknode"], da[n, "gobrick"]),
          ratio(d50[n, "blocknode"], d50[n, "gobrick"]), ratio(d99[n, "blocknode"], d99[n, "gobrick"])
        # Against the target alone: each total over the bound (1.00: as fast as the SAN of the guest allows).
        if ((n, "target") in aa)
          printf "| %d | | blocknode / target alone, gobrick / target alone | %s, %s | | %s, %s | |\n", n,
            ratio(aa[n, "blocknode"], aa[n, "target"]), ratio(aa[n, "gobrick"], aa[n, "target"]),
            ratio(da[n, "blocknode"], da[n, "target"]), ratio(da[n, "gobrick"], da[n, "target"])
      }
    }'
  echo
  echo "Per round (commands the shims recorded, iscsiadm/multipath/multipathd/dmsetup; what gobrick left, logged out by hand, not in its figures;" \
       "a round's line is written only once the node was found clean after it):"
  echo
  grep -h '^SANPEER kind=round' "$results/san-bench.txt" | sed 's/^SANPEER kind=round /- /'
fi

# Figure j: LUKS2 against plain on one LUN (its LUKSBENCH line).
if grep -q '^LUKSBENCH' "$results/luks-bench.txt" 2>/dev/null; then
  echo
  echo "## Figure j: LUKS2 against plain on one LUN"
  echo
  grep -h '^LUKSBENCH' "$results/luks-bench.txt" | sed 's/^LUKSBENCH //' | awk '
    {
      # key=value, a value in double quotes may hold blanks
      while (match($0, /^[a-z_0-9]+=("[^"]*"|[^ ]*)/)) {
        kv = substr($0, 1, RLENGTH); k = substr(kv, 1, index(kv, "=") - 1); v = substr(kv, index(kv, "=") + 1)
        gsub(/"/, "", v); f[k] = v; $0 = substr($0, RLENGTH + 2)
      }
      printf "%d rounds, plain and luks2 interleaved; one LUN of %d MiB over 2 paths, ext4; %d MiB written and read with O_DIRECT (dd bs=1M) through the filesystem.\n", f["rounds"], f["lun_mib"], f["io_mib"]
      printf "Guest CPU: %s, %d vCPUs, %d MiB, kernel %s; AES-NI flag: %s; xts(aes) driver: %s.\n\n", f["cpu"], f["vcpus"], f["mem_mib"], f["kernel"], f["cpu_aes"], f["xts_driver"]
      # The ratios from the medians (the guest prints them too, in its *_ratio fields).
      split("first restage unstage write read", w, " ")
      for (i in w) f[w[i] "_ratio"] = f["luks_" w[i] "_ms"] / (f["plain_" w[i] "_ms"] > 0 ? f["plain_" w[i] "_ms"] : 1)
      print "| median | plain | luks2 | luks2 / plain |"
      print "|---|---|---|---|"
      printf "| first stage of the blank LUN (ms) | %d | %d | %.2fx |\n", f["plain_first_ms"], f["luks_first_ms"], f["first_ratio"]
      printf "| restage (ms) | %d | %d | %.2fx |\n", f["plain_restage_ms"], f["luks_restage_ms"], f["restage_ratio"]
      printf "| unstage (ms) | %d | %d | %.2fx |\n", f["plain_unstage_ms"], f["luks_unstage_ms"], f["unstage_ratio"]
      printf "| write (MiB/s) | %.1f | %.1f | %.2fx |\n", f["io_mib"] * 1000 / f["plain_write_ms"], f["io_mib"] * 1000 / f["luks_write_ms"], 1 / f["write_ratio"]
      printf "| read (MiB/s) | %.1f | %.1f | %.2fx |\n", f["io_mib"] * 1000 / f["plain_read_ms"], f["io_mib"] * 1000 / f["luks_read_ms"], 1 / f["read_ratio"]
      printf "\nEvery round (first stage / restage / write / read, ms): plain %s; luks2 %s.\n", f["all_plain"], f["all_luks"]
    }'
fi
echo
echo "Boot: VM_QUIET=1 test-e2e/vm/e2e.sh san:san-bench, exit $rc; the scenario's log: $results/console.log."
echo "Leftovers after each drain (sessions, disks, maps, mounts, node and staging records): $(
  grep -q 'drained-.*FAILED' "$results/console.log" 2>/dev/null && echo FOUND ||
  { grep -c 'step drained-.* ok' "$results/console.log" 2>/dev/null | sed 's/$/ drain(s) checked, none/'; })"
