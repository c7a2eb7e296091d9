#!/bin/bash
# san-bench: figure h of the SAN benchmark (test-e2e/bench/README.md, "Figure h"): N LUNs of one tgtd
# target, each over both portals (2N SCSI disks, N multipath maps), staged all at once as kubelet does
# after a node comes back (one NodeStageVolume per volume in flight: GuestClient's "parallel", a thread
# each), published all at once, a stats sweep of every volume, unpublished all at once, and unstaged all
# at once (the drain). Then nothing may be left: no session, disk, map, mount, node record or staging
# record.
#
# The baseline, measured first for each N in the same boot: the target alone, without the plugin (one
# iscsiadm login per portal with the kernel's full scan, multipathd building the maps by itself, then
# the same teardown by hand). It says what the guest's target, kernel, udev and multipathd cost for N
# LUNs, which no plugin can go under.
#
# GUEST_SAN_N: the N to run, blanks between them (default 4: the smoke run of make test). Each N prints a
# line "SANBENCH key=value..." that test-e2e/bench/san-bench.sh collects into the results file.
# GUEST_SAN_JARS: plugin jars to compare, each N run once with each (the order alternating with N), the
# plugin restarted on the jar between them; default the boot's own jar. A row says which jar it was.
# GUEST_SAN_BASELINE=yes (make bench-san sets it): measure the target alone too; the smoke run skips it
# (about 30 s under TCG for N = 4, and it checks nothing of the plugin's).
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=40
IQN=iqn.2024-01.dev.blocknode:san-bench
LUN_MB=${GUEST_SAN_LUN_MB:-16}
read -r -a SIZES <<<"${GUEST_SAN_N-4}"
read -r -a JARS <<<"${GUEST_SAN_JARS:-$PLUGIN_JAR}"
UEVENTS=/tmp/bn-san-uevents
# The image's JVM flags (deploy/jvm.args: the heap, metaspace and code cache caps the DaemonSet runs with),
# after the guest's own, so that the peak RSS is the one a node would see.
mapfile -t IMAGE_FLAGS < <(grep -v '^[[:space:]]*#' "$REPO/deploy/jvm.args" | grep .)
PLUGIN_JAVA_OPTS+=("${IMAGE_FLAGS[@]}")
# Two jars compared: neither runs on the boot's AOT caches. They were trained on the boot's jar, and a JVM given
# another jar took the cached classes from them and only the rest from that jar: the "before" ran the after's
# code wherever the cache had it (and failed on a class the cache did not have).
if (( ${#JARS[@]} > 1 )); then
  without_aot() { local o; for o in "$@"; do [[ $o == -XX:AOTCache=* ]] || printf '%s\n' "$o"; done; }
  mapfile -t PLUGIN_JAVA_OPTS < <(without_aot "${PLUGIN_JAVA_OPTS[@]}")
  mapfile -t CLIENT_JAVA_OPTS < <(without_aot "${CLIENT_JAVA_OPTS[@]}")
fi

# Counts, for the figures: lines of the command record and of the uevent monitor.
commands_now() { wc -l < "$BN_COMMAND_LOG"; }
# (One number always: grep -c prints 0 and fails when nothing matches, and "0 0" would end plugin_run's arithmetic.)
uevents_now() { local n; n=$(grep -c '^KERNEL\[' "$UEVENTS" 2>/dev/null); echo "${n:-0}"; }
# The plugin's CPU seconds (user + system) so far, in clock ticks.
plugin_ticks() { awk '{print $14 + $15}' "/proc/$PLUGIN_PID/stat"; }

# ------------------------------------------------------------------------ the repair loop's idle cost

# GUEST_SAN_IDLE_S (default 5; make bench-san: SAN_IDLE_S, default 60; 0 skips it): the plugin's CPU over an
# idle window of that length, twice per N: with the N volumes published and idle (after the stats sweep), and
# after the drain, with no volume left (the same warm JVM: before the burst it was still finishing its start).
# The repair loop runs its passes in both at the same interval; with no volume a pass only reads the (empty)
# staging records and sweeps for orphans, so the second window is what the idle JVM and its fixed threads cost
# (uevent reader, timers, GC) and the difference is what the N volumes add:
# per volume and pass, difference / (N * passes), passes = window / interval (healthy volumes make each pass
# short against the interval). The repair loop's own share cannot be switched off at runtime; this is the part
# of it that grows with the volumes. That difference mixes in the JVM's compilation and garbage collection (on
# two emulated CPUs, most of it), so the window also reads the loop's own counters from the plugin's metrics:
# the CPU time of the loop's thread (blocknode_path_repair_cpu_seconds_total) over the volumes its passes
# looked at (blocknode_path_repair_volume_looks_total): its cost per volume and pass, apart from the JVM's.
IDLE_S=${GUEST_SAN_IDLE_S:-5}
IDLE_BASE_MS=0; IDLE_N_MS=0; LOOP_CPU_US=0; LOOP_LOOKS=0; LOOP_BASE_CPU_US=0
metric_total() { # name: its value in the plugin's scrape (no labels), 0 if absent
  curl -sf --max-time 10 "http://$BN_METRICS/metrics" | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}
idle_window() { # seconds: sets IDLE_MS (the plugin's CPU over that long, nothing asked of it), LOOP_CPU_US, LOOP_LOOKS
  local k0 k1 tck c0 c1 l0 l1
  tck=$(getconf CLK_TCK)
  c0=$(metric_total blocknode_path_repair_cpu_seconds_total); l0=$(metric_total blocknode_path_repair_volume_looks_total)
  k0=$(plugin_ticks); sleep "$1"; k1=$(plugin_ticks)
  c1=$(metric_total blocknode_path_repair_cpu_seconds_total); l1=$(metric_total blocknode_path_repair_volume_looks_total)
  IDLE_MS=$(( (k1 - k0) * 1000 / tck ))
  LOOP_CPU_US=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%d", (b - a) * 1e6 }')
  LOOP_LOOKS=$(awk -v a="$l0" -v b="$l1" 'BEGIN { printf "%d", b - a }')
}
# The line of figures: per volume-pass microseconds, and the share of one core at 100 volumes and the default
# 30 s interval (the fixed idle rate plus 100 volumes' passes at one per 30 s); then the loop's own: its thread's
# CPU in the window with the N volumes less that in the window without (a pass's fixed part: the records, the
# sweeps), per volume looked at, and 100 volumes every 30 s at that cost.
idle_report() { # n
  local n=$1 interval=${GUEST_SAN_REPAIR_INTERVAL:-5}
  awk -v n="$n" -v w="$IDLE_S" -v i="$interval" -v b="$IDLE_BASE_MS" -v v="$IDLE_N_MS" -v lc="$LOOP_CPU_US" \
      -v ll="$LOOP_LOOKS" -v lb="$LOOP_BASE_CPU_US" 'BEGIN {
    passes = w / i; per = (v - b) * 1000 / (n * passes); if (per < 0) per = 0
    share = (b / w + per / 1000 * 100 / 30) / 1000 * 100
    own = ll > 0 ? (lc - lb) / ll : 0; if (own < 0) own = 0; own_share = own * 100 / 30 / 1e6 * 100
    printf "idle_s=%d repair_interval_s=%d idle_base_ms=%d idle_n_ms=%d volume_pass_us=%d core_share_100_at_30s_pct=%.3f", w, i, b, v, per, share
    printf " loop_cpu_us=%d loop_base_cpu_us=%d loop_looks=%d loop_us_per_look=%d loop_share_100_at_30s_pct=%.4f", lc, lb, ll, own, own_share
  }'
}

# GUEST_SAN_JFR=1: a flight recording of the plugin over each stage burst (jcmd JFR.start/JFR.stop around it,
# outside the timed span), written to $VM_RESULTS/stage-N.jfr. test-e2e/bench/jfr-waits.sh reads it on the host
# (make bench-san does, into stage-N-jfr.txt): hot methods, and the wall-clock waits of the stage threads by the
# blocknode frames they waited in. Reading it in the guest took 90 s under TCG. The recording slows the burst a
# little: the row says jfr=1.
JFR=${GUEST_SAN_JFR:-0}
JCMD=$JAVA_HOME/bin/jcmd
jfr_start() { ((JFR)) || return 0; "$JCMD" "$PLUGIN_PID" JFR.start name=stage settings=profile >/dev/null; }
jfr_stop() { # n
  ((JFR)) || return 0
  "$JCMD" "$PLUGIN_PID" JFR.stop name=stage filename="$VM_RESULTS/stage-$1.jfr" >/dev/null || return
  echo "  flight recording of the stage burst: stage-$1.jfr (read it with test-e2e/bench/jfr-waits.sh)"
}

# The multipath maps and SCSI disks of the node right now.
count_of() { local n=0 p; for p in "$@"; do [[ -e $p ]] && n=$((n + 1)); done; echo "$n"; }
maps_now() { count_of /sys/block/dm-*; }
disks_now() { count_of /sys/block/sd*; }
# Every one of N maps holds both its paths.
# maps_with_paths K: how many dm maps have exactly K paths (slaves).
maps_with_paths() {
  local dm count=0
  for dm in /sys/block/dm-*; do [[ -e $dm && $(count_of "$dm"/slaves/*) == "$1" ]] && count=$((count + 1)); done
  echo "$count"
}
all_maps_whole() { (( $(maps_with_paths 2) == $1 )); }

# ------------------------------------------------------------------------------ the target alone

# What the guest's SAN costs for N LUNs without the plugin: login on both portals (the kernel scans every
# LUN), multipathd makes the maps; then the teardown vm_initiator_teardown does. Sets TARGET_UP_MS and
# TARGET_DOWN_MS. target_alone N [IQN]: figure h's target unless another is named (figure i's).
TARGET_UP_MS=0; TARGET_DOWN_MS=0
target_alone() {
  local n=$1 iqn=${2:-$IQN} t0 p
  t0=$(vm_now_ms)
  for p in "$PORTAL1" "$PORTAL2"; do
    iscsiadm -m node -T "$iqn" -p "$p" -o new >/dev/null &&
      iscsiadm -m node -T "$iqn" -p "$p" -o update -n node.session.scan -v auto &&
      iscsiadm -m node -T "$iqn" -p "$p" --login >/dev/null || return
  done
  vm_wait "$n maps of 2 paths each" $((60 + 2 * n)) all_maps_whole "$n" || return
  TARGET_UP_MS=$(( $(vm_now_ms) - t0 ))
  t0=$(vm_now_ms)
  vm_initiator_teardown >/dev/null || return
  TARGET_DOWN_MS=$(( $(vm_now_ms) - t0 ))
  echo "  target alone, $n LUNs x 2 paths: up in $TARGET_UP_MS ms, down in $TARGET_DOWN_MS ms"
}

# ------------------------------------------------------------------------------- the plugin's run

vol() { echo "san-$1"; }

# parallel_line VERB N [I...]: one "parallel" command with VERB for every volume 1..N, or for volumes I... alone
# (GuestClient's syntax).
parallel_line() {
  local verb=$1 n=$2 i v line="parallel" first=yes
  local -a which=("${@:3}")
  ((${#which[@]})) || mapfile -t which < <(seq 1 "$n")
  for i in "${which[@]}"; do
    v=$(vol "$i")
    [[ $first == yes ]] || line+=" &"
    first=no
    case $verb in
      stage) line+=" stagex $v $(staging_of "$v") ext4 $(bn_iscsi_ctx "$IQN" "$i" "$(bn_wwid $TID "$i")")" ;;
      publish) line+=" publishx $v $(staging_of "$v") $(target_of "$v") ext4" ;;
      unpublish) line+=" unpublish $v $(target_of "$v")" ;;
      unstage) line+=" unstage $v $(staging_of "$v")" ;;
    esac
  done
  echo "$line"
}

# Per-volume durations (ms) from a "parallel" reply's "[ok MS ...]" parts, sorted.
per_volume_ms() { grep -o '\[ok [0-9]*' <<<"$CSI_REPLY" | awk '{print $2}' | sort -n; }
# pct P: the P-th percentile (nearest rank) of the sorted numbers on stdin.
pct() { awk -v p="$1" '{v[NR] = $1} END {r = int((p * NR + 99) / 100); if (r < 1) r = 1; print v[r]}'; }

# burst VERB N: the N calls at once; sets BURST_MS (until the last reply) and BURST_PCT ("p50 p90 p99").
BURST_MS=0; BURST_PCT=""
burst() {
  local verb=$1 n=$2 t0 ms
  t0=$(vm_now_ms)
  [[ $verb != stage ]] || STAGE_RETRIES=0
  if csi $(parallel_line "$verb" "$n"); then
    ms=$(per_volume_ms)
  else
    [[ $verb == stage && $STAGE_RETRY == yes ]] || return 1
    retry_failed_stages "$n" "$t0" || return
    ms=$(tr ' ' '\n' <<<"${RETRIED_MS[*]}" | sort -n)
  fi
  BURST_MS=$(( $(vm_now_ms) - t0 ))
  [[ $(grep -c . <<<"$ms") == "$n" ]] || { echo "$verb: $(grep -c . <<<"$ms") replies for $n volumes" >&2; return 1; }
  BURST_PCT="$(pct 50 <<<"$ms") $(pct 90 <<<"$ms") $(pct 99 <<<"$ms")"
  echo "  $verb x $n at once: all done in $BURST_MS ms; per volume p50/p90/p99 ${BURST_PCT// //} ms"
}

# GUEST_SAN_STAGE_RETRY=yes (make bench-san's default; the smoke run fails instead): a stage of the burst that
# failed is called again as kubelet calls it again, after its exponential back-off (500 ms, doubling, at most
# 2 min 2 s: nestedpendingoperations' exponentialbackoff), until every volume is staged or 300 s have passed since
# the burst began. Measured at N = 25 on a quiet host: a stage failed when multipathd had refused both its paths
# for want of udev's record until the map's deadline (no map at all); kubelet's retry is what a node would do.
# The burst's time and each volume's then run to its successful stage; STAGE_RETRIES counts the calls made again.
STAGE_RETRY=${GUEST_SAN_STAGE_RETRY:-no}
STAGE_RETRIES=0
RETRIED_MS=()
# reply_outcomes: "ok MS" or "error MS" for each part of the last "parallel" reply, in the commands' order.
reply_outcomes() { grep -o '\[\(ok\|error\) [0-9]*' <<<"$CSI_REPLY" | tr -d '['; }
retry_failed_stages() {
  local n=$1 t0=$2 delay_ms=500 i k retry_t0 out
  local -a outcome left still
  mapfile -t outcome < <(reply_outcomes)
  ((${#outcome[@]} == n)) || { echo "stage: ${#outcome[@]} replies for $n volumes" >&2; return 1; }
  RETRIED_MS=()
  for ((i = 1; i <= n; i++)); do
    if [[ ${outcome[i - 1]} == ok* ]]; then RETRIED_MS+=("${outcome[i - 1]#ok }"); else left+=("$i"); fi
  done
  while ((${#left[@]})); do
    echo "  stage: ${#left[@]} of $n failed (${left[*]/#/san-}); $(grep -o 'first failure: error [0-9]* [A-Z_]*: [^[]*' <<<"$CSI_REPLY" | head -c 300)"
    if (( $(vm_now_ms) - t0 + delay_ms > 300000 )); then
      echo "stage: ${#left[@]} volumes still not staged 300 s after the burst began" >&2; return 1
    fi
    # kubelet's back-off, not a wait for a condition: the retry comes this long after the failure, as on a node.
    sleep "$(awk -v ms="$delay_ms" 'BEGIN {printf "%.3f", ms / 1000}')"
    delay_ms=$(( delay_ms * 2 > 122000 ? 122000 : delay_ms * 2 ))
    STAGE_RETRIES=$(( STAGE_RETRIES + ${#left[@]} ))
    retry_t0=$(vm_now_ms)
    csi $(parallel_line stage "$n" "${left[@]}") || true
    mapfile -t outcome < <(reply_outcomes)
    ((${#outcome[@]} == ${#left[@]})) || { echo "stage retry: ${#outcome[@]} replies for ${#left[@]} volumes" >&2; return 1; }
    still=()
    for ((k = 0; k < ${#left[@]}; k++)); do
      out=${outcome[k]}
      if [[ $out == ok* ]]; then RETRIED_MS+=($(( retry_t0 - t0 + ${out#ok } ))); else still+=("${left[k]}"); fi
    done
    left=("${still[@]}")
  done
  echo "  stage: every volume staged after $STAGE_RETRIES call(s) made again, as kubelet would"
}

# The stats sweep: every volume's NodeGetVolumeStats, one after another (kubelet's sweep, unhurried).
SWEEP_MS=0
stats_sweep() {
  local n=$1 i v t0
  t0=$(vm_now_ms)
  for ((i = 1; i <= n; i++)); do
    v=$(vol "$i")
    csi stats "$v" "$(target_of "$v")" || return
  done
  SWEEP_MS=$(( $(vm_now_ms) - t0 ))
  echo "  stats sweep of $n volumes: $SWEEP_MS ms"
}

# After the stage burst: every map whole, or the jar under test fails. Two cases are measured on instead, each
# waiting up to 300 s for multipathd to make the maps whole by itself: a jar before it (SAN_BEFORE_JAR; e.g. a
# build whose stages used one-path maps), and any jar when GUEST_SAN_WHOLE_WAIT=yes (make bench-san's default):
# at N >= 25 the guest's udev falls tens of seconds to minutes behind the disks, multipathd refuses a path until
# udev has read its serial, and a stage that waited its 30 s for the map goes on with the path it has (the second
# joins when udev's event reaches multipathd). MAPS_WHOLE says how many maps had one path, and how long after the
# burst every map was whole. The smoke run of make test keeps the strict check.
MAPS_WHOLE=yes
WHOLE_WAIT=${GUEST_SAN_WHOLE_WAIT:-no}
whole_after_burst() {
  local n=$1 t0 one short who="the jar before"
  MAPS_WHOLE=yes
  staged_whole "$n" && return
  if [[ $PLUGIN_JAR == "$GUEST_PLUGIN_JAR" ]]; then
    [[ $WHOLE_WAIT == yes ]] || return 1
    who="the jar under test (GUEST_SAN_WHOLE_WAIT=yes)"
  fi
  # Not whole: a map whose slaves are not its 2 disks (one; or none, seen while multipathd reloads a map).
  one=$(maps_with_paths 1); short=$(( n - $(maps_with_paths 2) )); t0=$(vm_now_ms)
  vm_wait "every map whole ($who, measured on)" 300 all_maps_whole "$n" && staged_whole "$n" || return
  MAPS_WHOLE="no:${short}_not_whole(${one}_one_path),whole_$(( $(vm_now_ms) - t0 ))_ms_later"
  echo "  $who: $short maps of $n did not hold both disks after the burst ($one held one);" \
       "whole $(( $(vm_now_ms) - t0 )) ms later"
}

staged_whole() {
  local n=$1
  [[ $(maps_now) == "$n" && $(disks_now) == $((2 * n)) ]] && all_maps_whole "$n" ||
    { echo "after the burst: $(maps_now) maps, $(disks_now) disks; expected $n and $((2 * n))" >&2; return 1; }
  bn_expect_sessions "$IQN" 2
}

# ------------------------------------------------------------------------ the burst after an outage

# Every path of the N published volumes cut at once, by freezing the target (SIGSTOP: its sockets stay, it
# answers nothing, as an array that hangs), and held for GUEST_SAN_OUTAGE_S seconds in all (0: not run), at
# least until every path has failed (past the sessions' replacement timeout, 15 s for a LUN under a map) and a
# pass of the repair loop has looked at every volume since (the smoke's default of 1 s holds it just that long).
# Then the target runs again. Meanwhile the plugin's repair loop runs and must take nothing down: no logout,
# record deletion or map flush in the command record, the same SCSI disks before and after. Afterwards: the
# time until every map has both paths active again, each volume's file reads back as written (the page
# cache dropped first), a new file can be written and synced, and the kernel logged no ext4 error. Nothing
# writes during the outage: with the tests' `no_path_retry fail` a write with no path fails at once.
OUTAGE_S=${GUEST_SAN_OUTAGE_S:-1}
# The repair loop every 5 s (the default is 30 s): in a burst it is one more thing at work, and during the
# outage it looks at every volume several times, and must take nothing down.
GUEST_PLUGIN_ARGS="${GUEST_PLUGIN_ARGS:-} --repair-interval=${GUEST_SAN_REPAIR_INTERVAL:-5}s"
OUTAGE_FAILED_MS=0; OUTAGE_RECOVERED_MS=0
# Paths of every multipath map of the node in state A (active) or F (failed), from dmsetup's status lines.
map_paths_in() { dmsetup status --target multipath 2>/dev/null | grep -oE "[0-9]+:[0-9]+ $1" | wc -l; }
all_paths_failed() { [[ $(map_paths_in A) == 0 && $(map_paths_in F) == $((2 * $1)) ]]; }
all_paths_active() { [[ $(map_paths_in F) == 0 && $(map_paths_in A) == $((2 * $1)) ]]; }
scsi_disks() { ls /sys/block | grep '^sd' | sort | tr '\n' ' '; }
# The multipath maps by name and device number: a map flushed and made again (the plugin removes maps by ioctl,
# which the command record does not show) comes back under a new number.
multipath_maps() { dmsetup ls --target multipath 2>/dev/null | sort | tr '\n' ' '; }
ext4_errors() { dmesg | grep -c 'EXT4-fs error'; }
repair_waits() { grep -c 'path repair waits' "$VM_RESULTS/plugin.log"; }
# looked_since LOOKS N: the repair loop has looked at N more volumes than LOOKS.
looked_since() { (( $(metric_total blocknode_path_repair_volume_looks_total) >= $1 + $2 )); }
TGTD_FROZEN=""
# (tgtd runs as two processes: both are frozen and thawed.)
thaw_target() { [[ -n $TGTD_FROZEN ]] && kill -CONT $TGTD_FROZEN; TGTD_FROZEN=""; }

outage() {
  local n=$1 i v c0 t0 t1 disks maps errors taken held waits looks
  local -A sums=()
  # The checksums are taken of a copy in the guest's memory: reading the volume's file would update its atime,
  # and the journal would commit that during the outage.
  for ((i = 1; i <= n; i++)); do
    v=$(vol "$i")
    head -c 65536 /dev/urandom > "/tmp/outage-$v" && sums[$v]=$(md5sum < "/tmp/outage-$v") &&
      cp "/tmp/outage-$v" "$(target_of "$v")/outage-check" && rm -f "/tmp/outage-$v" || return
  done
  sync
  disks=$(scsi_disks); maps=$(multipath_maps); errors=$(ext4_errors); c0=$(commands_now); waits=$(repair_waits)
  TGTD_FROZEN=$(pidof tgtd) && kill -STOP $TGTD_FROZEN || return
  t0=$(vm_now_ms)
  vm_wait "every path of the $n maps to fail" $((OUTAGE_S + 120)) all_paths_failed "$n" || { thaw_target; return 1; }
  OUTAGE_FAILED_MS=$(( $(vm_now_ms) - t0 ))
  looks=$(metric_total blocknode_path_repair_volume_looks_total)
  vm_wait "a repair pass over the $n volumes with every path failed" 60 looked_since "$looks" "$n" ||
    { thaw_target; return 1; }
  # The outage's length is what is tested here (a hold, not a wait for something): what is left of it.
  held=$(( OUTAGE_S * 1000 - ($(vm_now_ms) - t0) ))
  ((held > 0)) && sleep "$((held / 1000)).$(printf '%03d' $((held % 1000)))"
  thaw_target
  t1=$(vm_now_ms)
  vm_wait "every path of the $n maps active again" 180 all_paths_active "$n" || return
  OUTAGE_RECOVERED_MS=$(( $(vm_now_ms) - t1 ))
  taken=$(sed -n "$((c0 + 1)),\$p" "$BN_COMMAND_LOG" | grep -F ' java[' |
          grep -E -- '--logout|-o delete|multipath -f|dmsetup (remove|message .* fail_if_no_path)' || true)
  [[ -z $taken ]] || { echo "the plugin took something down during the outage: $taken" >&2; return 1; }
  [[ $(scsi_disks) == "$disks" ]] || { echo "SCSI disks before the outage: $disks; after: $(scsi_disks)" >&2; return 1; }
  [[ $(multipath_maps) == "$maps" ]] || { echo "multipath maps before the outage: $maps; after: $(multipath_maps)" >&2; return 1; }
  echo 3 > /proc/sys/vm/drop_caches
  for ((i = 1; i <= n; i++)); do
    v=$(vol "$i")
    [[ $(md5sum < "$(target_of "$v")/outage-check") == "${sums[$v]}" ]] ||
      { echo "$v: the file written before the outage reads back different" >&2; return 1; }
    echo after > "$(target_of "$v")/after-outage" && sync -f "$(target_of "$v")/after-outage" ||
      { echo "$v: no write after the outage" >&2; return 1; }
  done
  [[ $(ext4_errors) == "$errors" ]] || { echo "the kernel logged ext4 errors:" >&2; dmesg | grep 'EXT4-fs error' | tail -n 5 >&2; return 1; }
  echo "  outage of every path ($OUTAGE_S s, target frozen): all $((2 * n)) paths failed after $OUTAGE_FAILED_MS ms;" \
       "all active again $OUTAGE_RECOVERED_MS ms after the target resumed; nothing taken down (the repair loop said" \
       "$(( $(repair_waits) - waits )) times it waits); $n files read back the same"
}

# The commands the plugin ran between two marks of the record, per tool: "iscsiadm=.. multipath=.. ...".
commands_between() {
  sed -n "$(($1 + 1)),$2p" "$BN_COMMAND_LOG" | grep -F ' java[' |
    awk '{n[$3]++} END {for (t in n) printf "%s=%d ", t, n[t]}'
}

plugin_run() {
  local n=$1 c0 c1 c2 u0 u1 u2 k0 k1 tck hwm stage_ms stage_pct unstage_ms unstage_pct pub_ms pub_pct unpub_ms
  tck=$(getconf CLK_TCK)
  echo 5 > "/proc/$PLUGIN_PID/clear_refs"
  jfr_start || return
  c0=$(commands_now); u0=$(uevents_now); k0=$(plugin_ticks)
  burst stage "$n" || return
  stage_ms=$BURST_MS; stage_pct=$BURST_PCT
  c1=$(commands_now); u1=$(uevents_now)
  jfr_stop "$n" || return
  whole_after_burst "$n" || return
  burst publish "$n" || return
  pub_ms=$BURST_MS; pub_pct=$BURST_PCT
  stats_sweep "$n" || return
  if ((IDLE_S > 0)); then idle_window "$IDLE_S"; IDLE_N_MS=$IDLE_MS; fi
  ((OUTAGE_S > 0)) && { outage "$n" || return; }
  burst unpublish "$n" || return
  unpub_ms=$BURST_MS
  c2=$(commands_now)
  burst unstage "$n" || return
  unstage_ms=$BURST_MS; unstage_pct=$BURST_PCT
  k1=$(plugin_ticks)
  k1=$(( k1 - IDLE_N_MS * $(getconf CLK_TCK) / 1000 )) # the idle window is not part of the cycle's work
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PLUGIN_PID/status")
  if ((IDLE_S > 0)); then
    local loop_cpu_us=$LOOP_CPU_US loop_looks=$LOOP_LOOKS # the window with the volumes, less the one without
    idle_window "$IDLE_S"; IDLE_BASE_MS=$IDLE_MS; LOOP_BASE_CPU_US=$LOOP_CPU_US
    LOOP_CPU_US=$loop_cpu_us; LOOP_LOOKS=$loop_looks
    echo "  idle CPU over $IDLE_S s, repair loop every ${GUEST_SAN_REPAIR_INTERVAL:-5} s: $IDLE_N_MS ms with $n published," \
         "$IDLE_BASE_MS ms after the drain (no volume): $(idle_report "$n")"
  fi
  udevadm settle --timeout=60
  u2=$(uevents_now)
  local stage_cmds drain_cmds
  stage_cmds=$(commands_between "$c0" "$c1"); drain_cmds=$(commands_between "$c2" "$(commands_now)")
  echo "  commands, stage burst: $stage_cmds; drain: $drain_cmds"
  echo "  uevents: $((u1 - u0)) during the stage burst, $((u2 - u1)) after it; plugin peak RSS $((hwm / 1024)) MiB," \
       "CPU $(( (k1 - k0) * 1000 / tck )) ms over the whole cycle"
  printf 'SANBENCH jar=%s n=%d target_up_ms=%d target_down_ms=%d stage_all_ms=%d stage_p50_p90_p99=%s publish_all_ms=%d publish_p50_p90_p99=%s sweep_ms=%d unpublish_all_ms=%d unstage_all_ms=%d unstage_p50_p90_p99=%s peak_rss_kib=%d cpu_ms=%d uevents_stage=%d uevents_rest=%d stage_commands=%s drain_commands=%s outage_s=%d outage_failed_ms=%d outage_recovered_ms=%d stage_retries=%d vcpus=%d mem_mib=%d\n' \
    "$(basename "$PLUGIN_JAR" .jar)" "$n" "$TARGET_UP_MS" "$TARGET_DOWN_MS" "$stage_ms" "${stage_pct// //}" "$pub_ms" "${pub_pct// //}" "$SWEEP_MS" \
    "$unpub_ms" "$unstage_ms" "${unstage_pct// //}" "$hwm" $(( (k1 - k0) * 1000 / tck )) $((u1 - u0)) $((u2 - u1)) \
    "$(tr ' ' ',' <<<"${stage_cmds% }")" "$(tr ' ' ',' <<<"${drain_cmds% }")" "$OUTAGE_S" "$OUTAGE_FAILED_MS" \
    "$OUTAGE_RECOVERED_MS" "$STAGE_RETRIES" "$(nproc)" \
    "$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)" |
    sed "s/\$/ jfr=$JFR maps_whole=$MAPS_WHOLE $( ((IDLE_S > 0)) && idle_report "$n")/" | tee -a "$VM_RESULTS/san-bench.txt"
}

# Nothing of the run left on the node: no session, disk, map, node record, mount, staging record.
drained() { bn_node_clean && bn_target_released "$IQN"; }

# switch_plugin JAR: the plugin restarted on another jar (nothing is staged between two runs).
round=0
switch_plugin() {
  bn_plugin_stop || return
  PLUGIN_JAR=$1
  bn_plugin_start
  bn_plugin_ready
}

MONITOR_PID=""
monitor_start() {
  : > "$UEVENTS"
  # Line-buffered: into a file, udevadm's stdout is written a block at a time, and a count would miss the
  # events still in its buffer.
  stdbuf -oL udevadm monitor --kernel > "$UEVENTS" 2>/dev/null &
  MONITOR_PID=$!
  vm_wait "the uevent monitor" 10 grep -q 'monitor will print' "$UEVENTS"
}
monitor_stop() { [[ -n $MONITOR_PID ]] && kill "$MONITOR_PID" 2>/dev/null; wait "$MONITOR_PID" 2>/dev/null; MONITOR_PID=""; true; }
bn_on_fail() { thaw_target; monitor_stop; }

# ------------------------------------------------------------- figure i: beside Dell's gobrick

# Figure i (test-e2e/bench/README.md, "Figure i"): the same N LUNs attached and detached, all at once, by
# blocknode (NodeStageVolume / NodeUnstageVolume of block volumes: the attach alone, no filesystem, as
# gobrick gives a device and no more) and by Dell's gobrick iSCSI connector (GUEST_SAN_PEER: the harness
# test-e2e/bench/gobrick-attach, built on the host by test-e2e/bench/san-bench.sh; ConnectVolume then
# DisconnectVolumeByDeviceName, one goroutine per volume), in rounds that alternate which goes first. gobrick
# keeps the iSCSI sessions and node records when the last volume goes: they are counted, then logged out and
# deleted by hand (timed apart, not in gobrick's figures), so that each side starts from the same bare node.
#
# GUEST_SAN_PEER_N: figure i's N (blanks between them; empty: figure i is not run, as in the smoke run);
# GUEST_SAN_PEER_ROUNDS: rounds per N (default 3). Each side's per-volume durations are pooled over the rounds
# and their p50/p90/p99 taken with pct (figure h's); the totals are the median round's. Lines "SANPEER ...".
PEER=${GUEST_SAN_PEER:-}
read -r -a PEER_SIZES <<<"${GUEST_SAN_PEER_N:-}"
PEER_ROUNDS=${GUEST_SAN_PEER_ROUNDS:-3}
# GUEST_SAN_PEER_ARGS: more harness flags, e.g. "-max-parallel 64" (gobrick's default is 5 operations in flight).
read -r -a PEER_ARGS <<<"${GUEST_SAN_PEER_ARGS:-}"
PEER_TID=41
PEER_IQN=iqn.2024-01.dev.blocknode:san-peer
PEER_DIR=/tmp/bn-san-peer        # per-volume durations of every round, a file per side, operation and N
# The sides of a round; with GUEST_SAN_BASELINE=yes the target alone too (figure h's baseline: what bounds both).
PEER_SIDES=(blocknode gobrick)
[[ ${GUEST_SAN_BASELINE:-no} == yes ]] && PEER_SIDES+=(target)

peer_vol() { echo "peer-$1"; }

# peer_blocknode_line stage|unstage N: one "parallel" command over the N block volumes.
peer_blocknode_line() {
  local verb=$1 n=$2 i v line="parallel"
  for ((i = 1; i <= n; i++)); do
    v=$(peer_vol "$i")
    ((i > 1)) && line+=" &"
    case $verb in
      stage) line+=" stagex $v $(block_staging_of "$v") block $(bn_iscsi_ctx "$PEER_IQN" "$i" "$(bn_wwid $PEER_TID "$i")")" ;;
      unstage) line+=" unstage $v $(block_staging_of "$v")" ;;
    esac
  done
  echo "$line"
}

# The commands a process of COMM ran between two marks of the record, per tool: "iscsiadm=.. multipath=..".
peer_commands_between() {
  sed -n "$(($2 + 1)),$3p" "$BN_COMMAND_LOG" | grep -F " $1[" |
    awk '{n[$3]++} END {for (t in n) printf "%s%s=%d", (k++ ? "," : ""), t, n[t]}'
}

# peer_record SIDE OP N ALL_MS MS...: one operation's burst: its total and per-volume durations kept for
# the pooled percentiles.
# (The target alone has no per-volume durations: its maps come from one login and one scan of every LUN.)
peer_record() {
  local side=$1 op=$2 n=$3 all=$4; shift 4
  (($#)) && printf '%s\n' "$@" >> "$PEER_DIR/$side-$op-$n.ms"
  echo "$all" >> "$PEER_DIR/$side-$op-$n.all"
}

# N maps over 2N disks, each map whole, and one session per portal of figure i's target.
peer_staged_whole() {
  local n=$1
  [[ $(maps_now) == "$n" && $(disks_now) == $((2 * n)) ]] && all_maps_whole "$n" ||
    { echo "$(maps_now) maps, $(disks_now) disks; expected $n and $((2 * n)), each map over 2" >&2; return 1; }
  bn_expect_sessions "$PEER_IQN" 2
}

# blocknode's round: stage all, check the maps, unstage all, check that nothing is left.
PEER_CMDS=""
peer_blocknode_round() {
  local n=$1 c0 c1 c2 t0 ms all_stage all_unstage
  c0=$(commands_now); t0=$(vm_now_ms)
  csi $(peer_blocknode_line stage "$n") || return
  all_stage=$(( $(vm_now_ms) - t0 ))
  ms=$(per_volume_ms)
  [[ $(grep -c . <<<"$ms") == "$n" ]] || { echo "stage: $(grep -c . <<<"$ms") replies for $n volumes" >&2; return 1; }
  peer_record blocknode attach "$n" "$all_stage" $ms
  c1=$(commands_now)
  peer_staged_whole "$n" || return
  t0=$(vm_now_ms)
  csi $(peer_blocknode_line unstage "$n") || return
  all_unstage=$(( $(vm_now_ms) - t0 ))
  ms=$(per_volume_ms)
  [[ $(grep -c . <<<"$ms") == "$n" ]] || { echo "unstage: $(grep -c . <<<"$ms") replies for $n volumes" >&2; return 1; }
  peer_record blocknode detach "$n" "$all_unstage" $ms
  c2=$(commands_now)
  PEER_CMDS="attach_commands=$(peer_commands_between java "$c0" "$c1") detach_commands=$(peer_commands_between java "$c1" "$c2")"
  echo "  blocknode: $n block volumes staged in $all_stage ms, unstaged in $all_unstage ms; $PEER_CMDS"
  bn_node_clean && bn_target_released "$PEER_IQN"
}

# gobrick's round: connect all (the harness checks each device's WWID and map), check the maps, disconnect all
# (the harness checks that each map and disk is gone), then count and clean what gobrick left.
PEER_LEFT=""
peer_gobrick_round() {
  local n=$1 i vols="" out c0 c1 c2 whole left_s left_r left_w t0 cleanup_ms p
  for ((i = 1; i <= n; i++)); do vols+="${vols:+,}$i:$(bn_wwid $PEER_TID "$i")"; done
  c0=$(commands_now)
  out=$("$PEER" connect ${PEER_ARGS[@]+"${PEER_ARGS[@]}"} -target "$PEER_IQN" -portals "$PORTAL1,$PORTAL2" -volumes "$vols" 2>> "$VM_RESULTS/gobrick.log")
  local rc=$?
  c1=$(commands_now)
  echo "$out" >> "$VM_RESULTS/gobrick.out"
  if ((rc)); then peer_gobrick_failed "$n" "$out"; return; fi
  peer_record gobrick attach "$n" "$(sed -n 's/.* n=[0-9]* failed=0 all_ms=\([0-9]*\).*/\1/p' <<<"$out")" \
    $(sed -n 's/^GOBRICK op=connect lun=[0-9]* ms=\([0-9]*\) .*/\1/p' <<<"$out")
  # A map whose second path is not in yet when ConnectVolume returned: counted, then waited for.
  whole=$(maps_with_paths 2)
  vm_wait "$n maps of 2 paths each" $((60 + 2 * n)) all_maps_whole "$n" || return
  peer_staged_whole "$n" || return
  vols=$(sed -n 's/^GOBRICK op=connect lun=\([0-9]*\) ms=[0-9]* device=\(dm-[0-9]*\) wwn=\([0-9a-f]*\).*/\1:\3:\2/p' <<<"$out" | paste -sd,)
  out=$("$PEER" disconnect ${PEER_ARGS[@]+"${PEER_ARGS[@]}"} -target "$PEER_IQN" -portals "$PORTAL1,$PORTAL2" -volumes "$vols" 2>> "$VM_RESULTS/gobrick.log") ||
    { echo "gobrick disconnect failed:" >&2; echo "$out" >&2; return 1; }
  c2=$(commands_now)
  echo "$out" >> "$VM_RESULTS/gobrick.out"
  peer_record gobrick detach "$n" "$(sed -n 's/.* n=[0-9]* failed=0 all_ms=\([0-9]*\).*/\1/p' <<<"$out")" \
    $(sed -n 's/^GOBRICK op=disconnect lun=[0-9]* ms=\([0-9]*\).*/\1/p' <<<"$out")
  PEER_CMDS="attach_commands=$(peer_commands_between gobrick-attach "$c0" "$c1") detach_commands=$(peer_commands_between gobrick-attach "$c1" "$c2")"
  udevadm settle --timeout=30
  left_s=$(bn_sessions_of "$PEER_IQN"); left_r=$(bn_records_of "$PEER_IQN")
  left_w=$(grep -c '^/' /etc/multipath/wwids 2>/dev/null); left_w=${left_w:-0}
  [[ $(maps_now) == 0 && $(disks_now) == 0 ]] ||
    { echo "gobrick left $(maps_now) maps and $(disks_now) disks" >&2; return 1; }
  t0=$(vm_now_ms)
  for p in "$PORTAL1" "$PORTAL2"; do
    iscsiadm -m node -T "$PEER_IQN" -p "$p" --logout >/dev/null 2>&1
    iscsiadm -m node -T "$PEER_IQN" -p "$p" -o delete >/dev/null 2>&1
  done
  cleanup_ms=$(( $(vm_now_ms) - t0 ))
  PEER_LEFT="maps_whole_at_return=$whole left_sessions=$left_s left_records=$left_r left_wwids=$left_w cleanup_ms=$cleanup_ms"
  echo "  gobrick: $n volumes; $PEER_CMDS; $PEER_LEFT"
  bn_node_clean && bn_target_released "$PEER_IQN"
}

# The target alone's round (GUEST_SAN_BASELINE=yes): figure h's baseline on figure i's LUNs, what no connector can
# go much under in this guest (the logins' full scan and multipathd's maps from the uevents; the teardown by hand).
peer_target_round() {
  local n=$1
  target_alone "$n" "$PEER_IQN" || return
  peer_record target attach "$n" "$TARGET_UP_MS"
  peer_record target detach "$n" "$TARGET_DOWN_MS"
  bn_node_clean && bn_target_released "$PEER_IQN"
}

# A connect burst in which gobrick failed some volumes (once its discovery ends it gives a map a fixed 10 s, and
# under load that can pass): the round is counted as failed and its figures left out; the volumes it did
# connect are disconnected, the rest taken down by hand, and then the node must be clean as after any round.
PEER_FAILED=""
peer_gobrick_failed() {
  local n=$1 out=$2 failed vols
  failed=$(sed -n 's/^GOBRICK op=connect n=[0-9]* failed=\([0-9]*\) .*/\1/p' <<<"$out")
  echo "  gobrick: ${failed:-?} of $n connects failed:"
  grep -F 'error=' <<<"$out" | sed 's/^/    /'
  vols=$(sed -n 's/^GOBRICK op=connect lun=\([0-9]*\) ms=[0-9]* device=\(dm-[0-9]*\) wwn=\([0-9a-f]*\).*/\1:\3:\2/p' <<<"$out" | paste -sd,)
  [[ -z $vols ]] || "$PEER" disconnect -target "$PEER_IQN" -portals "$PORTAL1,$PORTAL2" -volumes "$vols" \
    >> "$VM_RESULTS/gobrick.out" 2>> "$VM_RESULTS/gobrick.log"
  vm_initiator_teardown >/dev/null 2>&1
  PEER_FAILED="connect_failed=${failed:-?}"
  bn_node_clean && bn_target_released "$PEER_IQN"
}

# peer_round SIDE N ROUND: one side's round, its line in the results.
peer_round() {
  local side=$1 n=$2 r=$3
  PEER_CMDS=""; PEER_LEFT=""; PEER_FAILED=""
  "peer_${side}_round" "$n" || return
  if [[ -n $PEER_FAILED ]]; then
    echo "SANPEER kind=round side=$side n=$n round=$r $PEER_FAILED" | tee -a "$VM_RESULTS/san-bench.txt"
    echo "$r" >> "$PEER_DIR/$side-failed-$n"
    return 0
  fi
  printf 'SANPEER kind=round side=%s n=%d round=%d attach_all_ms=%d detach_all_ms=%d %s %s\n' "$side" "$n" "$r" \
    "$(tail -n 1 "$PEER_DIR/$side-attach-$n.all")" "$(tail -n 1 "$PEER_DIR/$side-detach-$n.all")" "$PEER_CMDS" "$PEER_LEFT" |
    tee -a "$VM_RESULTS/san-bench.txt"
}

# peer_summary N: each side's pooled percentiles and median totals.
peer_summary() {
  local n=$1 side op line
  for side in "${PEER_SIDES[@]}"; do
    line="SANPEER kind=summary side=$side n=$n rounds=$PEER_ROUNDS failed_rounds=$(cat "$PEER_DIR/$side-failed-$n" 2>/dev/null | wc -l)"
    for op in attach detach; do
      # A side whose every round failed has no figures: "-"; the target alone has totals only.
      if [[ -s $PEER_DIR/$side-$op-$n.all ]]; then
        line+=" ${op}_all_ms=$(sort -n "$PEER_DIR/$side-$op-$n.all" | pct 50)"
      else
        line+=" ${op}_all_ms=-"
      fi
      if [[ -s $PEER_DIR/$side-$op-$n.ms ]]; then
        line+=" ${op}_p50_p90_p99=$(sort -n "$PEER_DIR/$side-$op-$n.ms" | pct 50)/$(sort -n "$PEER_DIR/$side-$op-$n.ms" | pct 90)/$(sort -n "$PEER_DIR/$side-$op-$n.ms" | pct 99)"
      else
        line+=" ${op}_p50_p90_p99=-/-/-"
      fi
    done
    echo "$line vcpus=$(nproc) mem_mib=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)" | tee -a "$VM_RESULTS/san-bench.txt"
  done
}

peer_figure() {
  local n=$1 r sizes=() i side
  for ((i = 1; i <= n; i++)); do sizes+=("$LUN_MB"); done
  rm -rf "$PEER_DIR"; mkdir -p "$PEER_DIR"
  step "peer-target-$n-luns" vm_target_create $PEER_TID "$PEER_IQN" "${sizes[@]}" || return
  for ((r = 1; r <= PEER_ROUNDS; r++)); do
    # Which side goes first rotates, so that none always meets the warmer (or the busier) guest.
    for ((i = 0; i < ${#PEER_SIDES[@]}; i++)); do
      side=${PEER_SIDES[$(( (r - 1 + i) % ${#PEER_SIDES[@]} ))]}
      step "peer-$n-round-$r-$side" peer_round "$side" "$n" "$r" || return
    done
  done
  peer_summary "$n"
  step "peer-target-delete-$n" eval 'bn_target_delete $PEER_TID; rm -f "$VM_LUN_DIR"/t$PEER_TID-lun*.img'
}

# ------------------------------------------------------------------- figure j: LUKS2 against plain, one LUN
# GUEST_SAN_LUKS_ROUNDS=R (make bench-san: SAN_LUKS_ROUNDS, default 3; 0, the smoke run's, skips it): one LUN of
# target 42 (GUEST_SAN_LUKS_LUN_MB, default 128) over both portals (its LUN 2 staged throughout, so the sessions
# stay logged in and a stage is the LUN's scan, map, LUKS2 and mkfs, not the logins), the same volume staged plain (ext4 on the
# multipath map) and with encryption=luks2 (ext4 on a LUKS2 mapping over the map), interleaved: in each round
# both, the order alternating by round. Each time: the LUN made blank from the array's side (its backing file
# truncated to nothing and back: zeros throughout, as a new LUN), the first stage (luks2: luksFormat, open, mkfs),
# GUEST_SAN_LUKS_IO_MB (default 64) written into a file of the staged filesystem with O_DIRECT (dd bs=1M
# oflag=direct conv=fsync, zeros: nothing below compresses), the caches dropped, read back with O_DIRECT, unstaged,
# staged again (the restage: luks2 opens the existing header) and unstaged. Medians per mode, and luks2 / plain,
# in a LUKSBENCH line (luks-bench.txt) with the conditions: the CPU's aes flag and the kernel's xts(aes) driver.
LUKS_TID=42
LUKS_IQN=iqn.2024-01.dev.blocknode:san-luks
LUKS_VOL=san-luks
LUKS_KEEPER=san-luks-keep
LUKS_ROUNDS=${GUEST_SAN_LUKS_ROUNDS:-0}
LUKS_LUN_MB=${GUEST_SAN_LUKS_LUN_MB:-128}
LUKS_IO_MB=${GUEST_SAN_LUKS_IO_MB:-64}
LUKS_KEY=""
declare -A LUKS_RESULTS # "MODE WHAT" -> the values of every round, blank-separated

luks_bench_start() {
  # Random each boot, never printed: a match in any result file is a leak (the host checks secret-canaries).
  LUKS_KEY=bk$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 30)
  echo "$LUKS_KEY" >> "$VM_RESULTS/secret-canaries"
  modprobe -a dm_crypt || return
  vm_target_create $LUKS_TID "$LUKS_IQN" "$LUKS_LUN_MB" 16 || return
  # LUN 2 stays staged through the rounds, so that the sessions do too: a stage's time is then the LUN's scan,
  # map, LUKS2 and mkfs, not two logins (tens of seconds under TCG on a busy host, the same for both modes).
  csi stagex $LUKS_KEEPER "$(staging_of $LUKS_KEEPER)" ext4 $(bn_iscsi_ctx "$LUKS_IQN" 2 "$(bn_wwid $LUKS_TID 2)")
}
luks_bench_stop() { csi unstage $LUKS_KEEPER "$(staging_of $LUKS_KEEPER)"; }
# The LUN as a new one: zeros throughout. No initiator holds it between two rounds (unstaged: logged out).
luks_blank() {
  local file size
  file=$(bn_lun_file $LUKS_TID 1); size=$(stat -c %s "$file") || return
  truncate -s 0 "$file" && truncate -s "$size" "$file"
}
luks_stage() { # MODE
  local extra=()
  [[ $1 == luks ]] && extra=(encryption=luks2 "secret:encryptionPassphrase=$LUKS_KEY")
  csi stagex $LUKS_VOL "$(staging_of $LUKS_VOL)" ext4 \
    $(bn_iscsi_ctx "$LUKS_IQN" 1 "$(bn_wwid $LUKS_TID 1)") "${extra[@]}"
}
# What the staging mount is on, by its dm uuid: CRYPT-LUKS2-... (luks) or mpath-... (plain).
luks_mounted_on() {
  local source uuid
  source=$(findmnt -n -o SOURCE --mountpoint "$(staging_of $LUKS_VOL)") || { echo "not staged" >&2; return 1; }
  uuid=$(cat "/sys/class/block/$(basename "$(readlink -f "$source")")/dm/uuid")
  case $1:$uuid in
    luks:CRYPT-LUKS2-*|plain:mpath-*) ;;
    *) echo "$1 stage mounted $source, dm uuid $uuid" >&2; return 1 ;;
  esac
}
luks_record() { LUKS_RESULTS["$1 $2"]+="$3 "; LUKS_LAST[$2]=$3; }
declare -A LUKS_LAST # this round's values
# luks_io MODE: LUKS_IO_MB written and read back with O_DIRECT through the staged filesystem; ms recorded.
luks_io() {
  local file t0
  file=$(staging_of $LUKS_VOL)/bench
  t0=$(vm_now_ms)
  dd if=/dev/zero of="$file" bs=1M count="$LUKS_IO_MB" oflag=direct conv=fsync status=none || return
  luks_record "$1" write_ms $(( $(vm_now_ms) - t0 ))
  sync && echo 3 > /proc/sys/vm/drop_caches || return
  t0=$(vm_now_ms)
  dd if="$file" of=/dev/null bs=1M iflag=direct status=none || return
  luks_record "$1" read_ms $(( $(vm_now_ms) - t0 ))
}
luks_round() { # ROUND MODE
  local round=$1 mode=$2 staging
  staging=$(staging_of $LUKS_VOL)
  luks_blank || return
  luks_stage "$mode" || return
  luks_record "$mode" first_ms "$CSI_MS"
  luks_mounted_on "$mode" || return
  luks_io "$mode" || return
  csi unstage $LUKS_VOL "$staging" || return
  luks_record "$mode" unstage_ms "$CSI_MS"
  luks_stage "$mode" || return
  luks_record "$mode" restage_ms "$CSI_MS"
  luks_mounted_on "$mode" || return
  csi unstage $LUKS_VOL "$staging" || return
  no_crypt_mapping_left || return
  echo "  round $round, $mode: first stage ${LUKS_LAST[first_ms]} ms, restage ${LUKS_LAST[restage_ms]} ms," \
       "unstage ${LUKS_LAST[unstage_ms]} ms; $LUKS_IO_MB MiB written in ${LUKS_LAST[write_ms]} ms, read in ${LUKS_LAST[read_ms]} ms"
}
no_crypt_mapping_left() {
  local left
  left=$(dmsetup ls --target crypt 2>/dev/null | grep -v '^No devices found')
  [[ -z $left ]] || { echo "crypt mappings left: $left" >&2; return 1; }
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
# The kernel's xts(aes) implementation dm-crypt gets (the highest priority), and whether the CPU has AES-NI.
xts_driver() {
  awk '/^name/ {n = $3} /^driver/ {d = $3} /^priority/ && n == "xts(aes)" && $3 > p {p = $3; best = d} END {print best ? best : "none"}' /proc/crypto
}
luks_report() {
  local what mode line ratios="" p l
  line="LUKSBENCH rounds=$LUKS_ROUNDS lun_mib=$LUKS_LUN_MB io_mib=$LUKS_IO_MB"
  for what in first_ms restage_ms unstage_ms write_ms read_ms; do
    for mode in plain luks; do line+=" ${mode}_$what=$(median <<<"${LUKS_RESULTS["$mode $what"]}")"; done
    p=$(median <<<"${LUKS_RESULTS["plain $what"]}"); l=$(median <<<"${LUKS_RESULTS["luks $what"]}")
    ratios+=" ${what%_ms}_ratio=$(awk -v l="$l" -v p="$p" 'BEGIN {printf "%.2f", (p > 0 ? l / p : 0)}')"
  done
  line+="$ratios all_plain=\"${LUKS_RESULTS[plain first_ms]% }/${LUKS_RESULTS[plain restage_ms]% }/${LUKS_RESULTS[plain write_ms]% }/${LUKS_RESULTS[plain read_ms]% }\""
  line+=" all_luks=\"${LUKS_RESULTS[luks first_ms]% }/${LUKS_RESULTS[luks restage_ms]% }/${LUKS_RESULTS[luks write_ms]% }/${LUKS_RESULTS[luks read_ms]% }\""
  line+=" xts_driver=$(xts_driver) cpu_aes=$(grep -qw aes /proc/cpuinfo && echo yes || echo no)"
  line+=" cpu=\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)\" vcpus=$(nproc)"
  line+=" mem_mib=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) kernel=$(uname -r)"
  echo "$line" | tee -a "$VM_RESULTS/luks-bench.txt"
}
luks_bench() {
  local r mode order
  for ((r = 1; r <= LUKS_ROUNDS; r++)); do
    order=(plain luks); ((r % 2 == 0)) && order=(luks plain)
    for mode in "${order[@]}"; do step "luks-round-$r-$mode" luks_round "$r" "$mode" || return; done
  done
  step luks-report luks_report
}

bn_begin
step plugin-ready bn_plugin_ready
step uevent-monitor monitor_start
for n in "${SIZES[@]}"; do
  sizes=(); for ((i = 1; i <= n; i++)); do sizes+=("$LUN_MB"); done
  step "target-$n-luns"     vm_target_create $TID "$IQN" "${sizes[@]}"
  [[ ${GUEST_SAN_BASELINE:-no} == yes ]] && step "target-alone-$n" target_alone "$n"
  order=("${JARS[@]}")
  # Alternate which jar goes first, so that neither always meets the warmer (or the busier) guest.
  if (( ${#JARS[@]} == 2 && round++ % 2 == 1 )); then order=("${JARS[1]}" "${JARS[0]}"); fi
  for jar in "${order[@]}"; do
    [[ $jar == "$PLUGIN_JAR" ]] || step "plugin-on-$(basename "$jar" .jar)" switch_plugin "$jar"
    step "plugin-$n-volumes"  plugin_run "$n"
    step "drained-$n"         drained
  done
  step "target-delete-$n"   eval 'bn_target_delete $TID; rm -f "$VM_LUN_DIR"/t$TID-lun*.img'
done
if ((${#PEER_SIZES[@]})); then
  [[ -x $PEER ]] || { echo "figure i: no gobrick harness at \"$PEER\" (GUEST_SAN_PEER)"; exit 1; }
  for n in "${PEER_SIZES[@]}"; do peer_figure "$n"; done
fi
step uevent-monitor-stop monitor_stop
if ((LUKS_ROUNDS > 0)); then
  rm -f "$VM_RESULTS/luks-bench.txt"
  step luks-target luks_bench_start
  luks_bench
  step luks-keeper-unstage luks_bench_stop
  step luks-drained eval 'bn_node_clean && bn_target_released "$LUKS_IQN"'
  step luks-target-delete eval 'bn_target_delete $LUKS_TID; rm -f "$VM_LUN_DIR"/t$LUKS_TID-lun*.img'
fi
bn_end
