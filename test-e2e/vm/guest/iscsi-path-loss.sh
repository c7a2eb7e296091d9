#!/bin/bash
# iscsi-path-loss: one of the two portals goes away under a published volume with a writer running.
#
# tgtd listens on every address, so it cannot drop one portal (`tgtadm --op delete --mode portal`
# refuses 127.0.0.2:3260: its only portals are 0.0.0.0:3260 and [::]:3260). The path is cut on the
# initiator's side instead: a blackhole route for 127.0.0.2 in the local table, which drops the
# session's packets to that portal (and its reconnects) until it is deleted. Then:
#   - the writer (4 KiB at a time, each fsynced, on the published filesystem) keeps completing writes:
#     I/O goes on over the other path after a stall (measured: the longest gap between two writes);
#   - multipathd shows that path failed and dmsetup status one failed path ("F");
#   - NodeGetVolumeStats still answers and calls the volume abnormal; blocknode_volume_paths shows
#     1 serving and 1 failed path, and 2/0 again after the path is back;
#   - the route is deleted: iscsid logs back in, the path becomes active again, the writer never saw
#     an error; then unpublish and unstage leave the node clean.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=15
IQN=iqn.2024-01.dev.blocknode:paths
VOLUME=vol-p
STAGING=$(staging_of $VOLUME)
TARGET=$(target_of $VOLUME)
WWID=$(bn_wwid $TID 1)
PROGRESS=/tmp/bn-path-loss-progress
WRITER_ERRORS=/tmp/bn-path-loss-errors
STOP=/tmp/bn-path-loss-stop
WRITER=""
CUT_AT=0
ROUTE_SET=no

writer() {
  local i=0
  : > "$PROGRESS"; : > "$WRITER_ERRORS"
  until [[ -e $STOP ]]; do
    if dd if=/dev/urandom of="$TARGET/w" bs=4k count=1 seek=$((i % 1024)) conv=fsync,notrunc status=none 2>>"$WRITER_ERRORS"; then
      echo "$(vm_now_ms)" >> "$PROGRESS"
    else
      echo "write $i failed at $(vm_now_ms)" >> "$WRITER_ERRORS"
    fi
    i=$((i + 1))
  done
}
start_writer() {
  rm -f "$STOP"
  writer & WRITER=$!
  vm_wait "the writer's first writes" 30 sh -c "[ \$(wc -l < $PROGRESS) -ge 3 ]"
}
writes_since() { awk -v t="$1" '$1 > t' "$PROGRESS" | wc -l; }

# Session of the second portal, and the recovery timeout multipathd set on both (fast_io_fail_tmo).
session_tmos() {
  local s out=""
  for s in /sys/class/iscsi_session/session*; do
    [[ $(cat "$s/targetname") == "$IQN" ]] || continue
    out+="${s##*/}=$(cat "$s/recovery_tmo")s "
  done
  echo "  iSCSI recovery_tmo (multipathd sets it from fast_io_fail_tmo): $out"
}

# dmsetup status of a multipath map lists each path as "MAJOR:MINOR A|F FAIL_COUNT ...".
map_status() { dmsetup status "$WWID" 2>/dev/null; }
paths_in() { map_status | grep -oE "[0-9]+:[0-9]+ $1" | wc -l; }
one_path_failed() { [[ $(paths_in F) == 1 && $(paths_in A) == 1 ]]; }
all_paths_active() { [[ $(paths_in F) == 0 && $(paths_in A) == 2 ]]; }

cut_path() {
  CUT_AT=$(vm_now_ms)
  ip route add blackhole 127.0.0.2/32 table local && ROUTE_SET=yes
}
path_failed() {
  vm_wait "a failed path in $WWID's map" 90 one_path_failed || return
  echo "  path failed $(( $(vm_now_ms) - CUT_AT )) ms after the cut: $(map_status)"
  multipathd show paths format '%d %t %T %o' 2>/dev/null | sed 's/^/    /'
  local dm s
  dm=$(vm_mpath_dm "$WWID")
  for s in $(ls "/sys/block/$dm/slaves"); do
    echo "    $s: sysfs device/state $(cat "/sys/block/$s/device/state" 2>/dev/null || echo gone)"
  done
}

# With one of two paths failed the volume works but is degraded: CSI's VolumeCondition says a volume
# is normal when it is "available for use and operating optimally", so this should be abnormal.
STATS_DURING=""
stats_degraded() {
  [[ $STATS_DURING == *abnormal=true* ]] || { echo "NodeGetVolumeStats said: ${STATS_DURING#ok }" >&2; return 1; }
}
io_goes_on() {
  local mark
  mark=$(vm_now_ms)
  vm_wait "writes after the path failed" 60 sh -c "[ \$(awk -v t=$mark '\$1 > t' $PROGRESS | wc -l) -ge 10 ]" || return
  echo "  $(writes_since "$CUT_AT") writes since the cut, $(writes_since "$mark") since the path was seen failed"
}
# NodeGetVolumeHealth (kubelet 1.37+) and NodeGetStorageHealth must say the same: expected "Status/Reason ..."
# words (or "healthy") at the start of the reply.
health_says() { # expected
  csi health $VOLUME "$TARGET" || return
  echo "  NodeGetVolumeHealth: ${CSI_REPLY#ok }"
  [[ $(awk '{$1=""; $2=""; sub(/^ +/, ""); sub(/ *\|.*/, ""); print}' <<<"$CSI_REPLY") == "$1" ]] ||
    { echo "expected $1" >&2; return 1; }
}
storage_health_says() { # expected
  csi storagehealth || return
  echo "  NodeGetStorageHealth: ${CSI_REPLY#ok }"
  [[ $(awk '{$1=""; $2=""; sub(/^ +/, ""); sub(/ *\|.*/, ""); print}' <<<"$CSI_REPLY") == "$1" ]] ||
    { echo "expected $1" >&2; return 1; }
}
stats_answer() {
  csi stats $VOLUME "$TARGET" "$STAGING" || return
  echo "  NodeGetVolumeStats: ${CSI_REPLY#ok }"
  STATS_DURING=$CSI_REPLY
}
restore_path() {
  ip route del blackhole 127.0.0.2/32 table local && ROUTE_SET=no || return
  local t0
  t0=$(vm_now_ms)
  vm_wait "the path to come back" 120 all_paths_active || return
  echo "  both paths active $(( $(vm_now_ms) - t0 )) ms after the route was deleted: $(map_status)"
}
stop_writer() {
  touch "$STOP"; wait "$WRITER"; WRITER=""
  local longest
  longest=$(awk 'NR > 1 && $1 - prev > max {max = $1 - prev} {prev = $1} END {print max + 0}' "$PROGRESS")
  echo "  writer: $(wc -l < "$PROGRESS") writes, longest gap between two $longest ms, errors: $(grep -c . "$WRITER_ERRORS")"
  [[ ! -s $WRITER_ERRORS ]] || { echo "the writer saw errors:" >&2; head -n 5 "$WRITER_ERRORS" >&2; return 1; }
}

# The plugin's blocknode_volume_paths gauge for this volume and a state (serving|failed) must equal $2.
paths_gauge() {
  local value
  value=$(curl -sf --max-time 10 "http://$BN_METRICS/metrics" | awk -v v="volume_id=\"$VOLUME\"" \
    -v s="state=\"$1\"" 'index($0, "blocknode_volume_paths{") == 1 && index($0, v) && index($0, s) {print $NF}')
  echo "  blocknode_volume_paths{volume_id=\"$VOLUME\",state=\"$1\"} ${value:-absent}"
  [[ -n $value ]] && awk -v a="$value" -v b="$2" 'BEGIN {exit !(a + 0 == b + 0)}' ||
    { echo "expected $2" >&2; return 1; }
}

# On a failure (bn_fail) and at exit: the writer stopped and the route gone before anything is torn down.
bn_on_fail() {
  touch "$STOP"
  [[ -n $WRITER ]] && { kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null; WRITER=""; }
  [[ $ROUTE_SET == yes ]] && ip route del blackhole 127.0.0.2/32 table local && ROUTE_SET=no
  true
}
trap bn_on_fail EXIT

bn_begin
step target-create   vm_target_create $TID "$IQN" 64
step plugin-ready    bn_plugin_ready
step stage           csi stagex $VOLUME "$STAGING" ext4 $(bn_iscsi_ctx "$IQN" 1 "$WWID")
step publish         csi publishx $VOLUME "$STAGING" "$TARGET" ext4
step two-paths       all_paths_active
session_tmos
step start-writer    start_writer
step cut-portal-2    cut_path
step path-failed     path_failed
step io-goes-on      io_goes_on
step stats-answer    stats_answer
step stats-say-degraded stats_degraded
step health-degraded health_says "DEGRADED/PathsFailed"
step storage-degraded storage_health_says "STORAGE_DEGRADED/IscsiPathsFailed"
step gauge-one-failed eval 'paths_gauge failed 1 && paths_gauge serving 1'
step restore-portal  restore_path
step io-after        io_goes_on
step stop-writer     stop_writer
step stats-healthy   stats_answer
step health-healthy  health_says "healthy"
step storage-healthy storage_health_says "healthy"
step gauge-all-serving eval 'paths_gauge failed 0 && paths_gauge serving 2'
step unpublish       csi unpublish $VOLUME "$TARGET"
step unstage         csi unstage $VOLUME "$STAGING"
step logged-out      eval 'bn_target_released "$IQN" && vm_leftovers'
step target-delete   bn_target_delete $TID
bn_end
