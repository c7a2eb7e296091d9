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
#     1 serving and 1 failed path, and 2/0 again after the path is back; `blocknode status` (a second JVM,
#     reading only the records and sysfs) says the same: PathsFailed, 1 of 2 paths serving, exit code 1;
#   - the route is deleted: iscsid logs back in, the path becomes active again, the writer never saw
#     an error;
#   - the plugin runs its repair loop every 5 s (--repair-interval=5s): while portal 2's session is in iscsid's
#     recovery it says it leaves it to iscsid, and logs nothing out. Then portal 2's session is logged out behind
#     the plugin's back (iscsiadm -u, as an operator or another tool would): its disk goes with it and the map serves
#     on portal 1's path alone. The repair logs in again with the node record the stage wrote, scans the LUN on the
#     new session only, and the map has 2 active paths again (the time since the logout printed against the goal
#     of two intervals); the writer never saw an error, a file written before reads back the same, and portal 1's
#     session and disk are the same ones throughout;
#   - then BOTH sessions are logged out at once behind the plugin's back (iscsiadm -m node -T IQN -u): the map,
#     held by the mount, has no path left and queues the writer's I/O (this volume's map queues: no_path_retry 300,
#     set for its WWID alone in /etc/multipath/conf.d, where the boot's default is fail). The repair logs both portals
#     in again, scans the LUN on each new session, checks its WWID and has multipathd add both; the time since the
#     logout is printed against two intervals, the writer saw no error, the file reads back the same;
#   - the node's iscsid is restarted with the volume staged: the same two sessions, both paths active, nothing
#     logged in again or out, no write failed;
#   - the target (tgtd) is restarted, killed as in a crash and started again with the same LUNs: iscsid logs both
#     sessions back in by itself, both paths active, no write failed, the file reads back the same;
#   - then unpublish and unstage leave the node clean.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=15
IQN=iqn.2024-01.dev.blocknode:paths
VOLUME=vol-p
STAGING=$(staging_of $VOLUME)
TARGET=$(target_of $VOLUME)
WWID=$(bn_wwid $TID 1)
CUT_AT=0
ROUTE_SET=no
REPAIR_INTERVAL=5
GUEST_PLUGIN_ARGS="${GUEST_PLUGIN_ARGS:-} --repair-interval=${REPAIR_INTERVAL}s"

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
io_goes_on() { bn_io_goes_on "$CUT_AT" "the path was seen failed"; }
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
# On a failure (bn_fail) and at exit: the writer stopped and the route gone before anything is torn down.
bn_on_fail() {
  bn_writer_kill
  [[ $ROUTE_SET == yes ]] && ip route del blackhole 127.0.0.2/32 table local && ROUTE_SET=no
  pidof iscsid >/dev/null || vm_iscsid_start
  [[ -e $QUEUE_CONF ]] && map_queues_unset
  true
}
# The plugin's word that it left the volume unfenced, and why.
staged_unfenced() {
  grep -q "volume $VOLUME is staged without fencing: its target (INQUIRY IET VIRTUAL-DISK, Linux tgt)" \
    "$VM_RESULTS/plugin.log"
}

# blocknode status -o json, as an on-call engineer runs it beside the plugin: exit code 1 (a problem), the
# volume's paths 1 of 2 and the PathsFailed problem naming the failed path. Started on the client's class path
# (the same jar's Main) so that the client's AOT cache applies: without one a JVM takes ~20 s to start under TCG.
status_says_one_failed() {
  local out code=0
  out=$("$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$PLUGIN_JAR:$CLIENT_JAR" dev.blocknode.Main status --state-dir "$STATE" --kubelet-root "$KUBELET" -o json) || code=$?
  echo "  blocknode status: exit $code, $(grep -oE '"paths":\{[^}]*\}' <<<"$out")"
  [[ $code == 1 ]] || { echo "status exited $code, not 1 (a problem)" >&2; return 1; }
  grep -q '"paths":{"serving":1,"total":2,' <<<"$out" || { echo "status: $out" >&2; return 1; }
  grep -q '{"reason":"PathsFailed","severity":"DEGRADED"' <<<"$out" || { echo "status: $out" >&2; return 1; }
}

# ------------------------------------------------------------------- a session logged out behind the plugin's back

# "sessionN diskname" of the session to PORTAL and the LUN's disk on it.
session_of_portal() {
  local s
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/targetname") == "$IQN" ]] || continue
    [[ $(cat "/sys/class/iscsi_connection/connection${s##*session}:0/persistent_address") == "$1" ]] || continue
    echo "${s##*/} $(ls "$s"/device/target*/*/block 2>/dev/null | head -n 1)"
  done
}
PORTAL_1_BEFORE=""
FILE_SUM=""
left_to_iscsid_logged() {
  grep -q "volume $VOLUME: path repair waits: iSCSI session(s) at 127.0.0.2:3260 (session[0-9]* [A-Z_]*) are left to iscsid's own recovery" \
    "$VM_RESULTS/plugin.log" || { echo "the repair loop did not say it left the recovering session to iscsid" >&2; return 1; }
}
nothing_logged_out() {
  ! grep -E "logged out of|--logout" "$VM_RESULTS/plugin.log" || { echo "the plugin logged a session out" >&2; return 1; }
}
before_logout() {
  FILE_SUM=$(bn_write_file "$TARGET/before-logout" 8) || return
  PORTAL_1_BEFORE=$(session_of_portal 127.0.0.1)
  echo "  portal 1: $PORTAL_1_BEFORE"
  [[ $PORTAL_1_BEFORE == session*\ sd* ]]
}
one_session() { [[ $(bn_sessions_of "$IQN") == 1 ]]; }
LOGGED_OUT_AT=0
log_out_portal_2() {
  LOGGED_OUT_AT=$(vm_now_ms)
  iscsiadm -m node -T "$IQN" -p 127.0.0.2:3260 -u >/dev/null || return
  vm_wait "portal 2's session gone" 30 one_session || return
  echo "  portal 2 logged out; the map: $(map_status)"
}
# The goal (two intervals) is reported, not asserted: under a loaded host each iscsiadm and multipath command of the
# repair takes seconds (22-42 s were seen at load 25), and a timed assertion would only make the tier flaky. The
# deadline is the generous one of every other wait here; the time it took is printed for the reader.
repaired_within_two_intervals() {
  vm_wait "both paths active again by the repair" 120 all_paths_active || return
  local took=$(( $(vm_now_ms) - LOGGED_OUT_AT ))
  echo "  both paths active $took ms after the logout ($( ((took <= 2 * REPAIR_INTERVAL * 1000)) && echo within ||
    echo beyond) two repair intervals of ${REPAIR_INTERVAL} s): $(map_status); portal 2: $(session_of_portal 127.0.0.2)"
}
# The repair's line comes when the whole repair returns (the record saved), a moment after multipathd took the path.
relogin_lines() {
  grep -E "volume $VOLUME: logged in again to $IQN via 127.0.0.2:3260|volume $VOLUME: path repair brought back \[[0-9:]+=sd[a-z]+\]" \
    "$VM_RESULTS/plugin.log"
}
both_relogin_lines() { [[ $(relogin_lines | wc -l) -ge 2 ]]; }
relogin_logged() {
  vm_wait "the relogin and the repair in the plugin's log" 60 both_relogin_lines || return
  relogin_lines | sed 's/^/  /'
}
sessions_counted() { bn_repairs_counted iscsi session; }
portal_1_untouched() {
  local now
  now=$(session_of_portal 127.0.0.1)
  [[ $now == "$PORTAL_1_BEFORE" ]] || { echo "portal 1 was $PORTAL_1_BEFORE, is $now" >&2; return 1; }
}

# ---------------------------------------------------------------- every session gone; iscsid and the target restarted

# This volume's map queues I/O while it has no path, for up to 300 checker intervals (the boot's default is
# no_path_retry fail): with every session gone, the map held by the mount must hold the writer's I/O until the repair
# brings a path back, as a production map with a no_path_retry number does. Set for this WWID alone.
QUEUE_CONF=/etc/multipath/conf.d/bn-path-loss.conf
map_queues_set() {
  mkdir -p "${QUEUE_CONF%/*}" &&
    printf 'multipaths {\n    multipath {\n        wwid %s\n        no_path_retry 300\n    }\n}\n' "$WWID" > "$QUEUE_CONF" &&
    multipathd reconfigure >/dev/null
}
map_queues() { dmsetup table "$WWID" 2>/dev/null | grep -q queue_if_no_path; }
map_queues_unset() { rm -f "$QUEUE_CONF"; multipathd reconfigure >/dev/null; true; }

sessions_of_target() {
  local s
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/targetname") == "$IQN" ]] && echo "${s##*/}"
  done
}
no_session() { [[ $(bn_sessions_of "$IQN") == 0 ]]; }
ALL_GONE_AT=0
log_out_every_session() {
  ALL_GONE_AT=$(vm_now_ms)
  iscsiadm -m node -T "$IQN" -u >/dev/null || return
  vm_wait "every session of $IQN gone" 30 no_session || return
  echo "  both sessions logged out in $(( $(vm_now_ms) - ALL_GONE_AT )) ms; the map: $(map_status)"
}
all_repaired_within_two_intervals() {
  vm_wait "both paths active again by the repair" 120 all_paths_active || return
  local took=$(( $(vm_now_ms) - ALL_GONE_AT ))
  echo "  both paths active $took ms after every session was logged out ($( ((took <= 2 * REPAIR_INTERVAL * 1000)) &&
    echo within || echo beyond) two repair intervals of ${REPAIR_INTERVAL} s): $(map_status); sessions: $(sessions_of_target | xargs)"
}
all_gone_logged() {
  grep "volume $VOLUME: no path of its multipath map serves I/O and 2 of its 2 portal(s) have no session" \
    "$VM_RESULTS/plugin.log" | tail -n 1 | sed 's/^/  /' | grep . ||
    { echo "the repair did not say it found every session of the volume gone" >&2; return 1; }
}

SESSIONS_BEFORE=""
LOGINS_BEFORE=0
relogins() { grep -c "volume $VOLUME: logged in again to" "$VM_RESULTS/plugin.log"; }
restart_iscsid() {
  SESSIONS_BEFORE=$(sessions_of_target | xargs)
  LOGINS_BEFORE=$(relogins)
  local pid t0
  t0=$(vm_now_ms)
  pid=$(pidof iscsid) || return
  kill $pid || return
  vm_wait "iscsid to exit" 30 sh -c "! pidof iscsid >/dev/null" || return
  vm_iscsid_start || return
  echo "  iscsid restarted in $(( $(vm_now_ms) - t0 )) ms (pid $pid -> $(pidof iscsid)); sessions before: $SESSIONS_BEFORE"
}
same_sessions_after_iscsid() {
  vm_wait "both paths active" 60 all_paths_active || return
  local now
  now=$(sessions_of_target | xargs)
  echo "  sessions after: $now; iscsiadm -m session: $(iscsiadm -m session 2>/dev/null | grep -c "$IQN") of $IQN"
  [[ $now == "$SESSIONS_BEFORE" ]] || { echo "sessions were $SESSIONS_BEFORE, are $now" >&2; return 1; }
  [[ $(relogins) == "$LOGINS_BEFORE" ]] || { echo "the repair logged in again after iscsid's restart" >&2; return 1; }
}

TARGET_DOWN_AT=0
restart_target() {
  local pid
  TARGET_DOWN_AT=$(vm_now_ms)
  pid=$(pidof tgtd) || return
  kill -KILL $pid || return
  vm_wait "tgtd to exit" 30 sh -c "! pidof tgtd >/dev/null" || return
  vm_tgtd_start && vm_target_create $TID "$IQN" 64 || return
  echo "  tgtd killed and started again with target $TID in $(( $(vm_now_ms) - TARGET_DOWN_AT )) ms"
}
paths_back_after_target() {
  vm_wait "both paths active after the target's restart" 120 all_paths_active || return
  echo "  both paths active $(( $(vm_now_ms) - TARGET_DOWN_AT )) ms after the target was killed: $(map_status)"
}

trap bn_on_fail EXIT

bn_begin
step target-create   vm_target_create $TID "$IQN" 64
step plugin-ready    bn_plugin_ready
# fencing stays at its default, auto, which leaves tgt's LUNs unfenced: tgt ties a reservation registration to
# the session, so the session iscsid re-establishes after the cut would come back unregistered and fail its
# writes under the reservation. stage-unfenced checks that the plugin saw that (the fc scenario cuts a path of a
# fenced volume on LIO, which keeps the registration as SPC-4 asks, and sees no failed write).
step map-queues-set  map_queues_set
step stage           csi stagex $VOLUME "$STAGING" ext4 $(bn_iscsi_ctx "$IQN" 1 "$WWID")
step stage-unfenced  staged_unfenced
step publish         csi publishx $VOLUME "$STAGING" "$TARGET" ext4
step two-paths       all_paths_active
step map-queues      vm_wait "queue_if_no_path in $WWID's table" 30 map_queues
session_tmos
step start-writer    bn_writer_start "$TARGET/w"
step cut-portal-2    cut_path
step path-failed     path_failed
step io-goes-on      io_goes_on
step stats-answer    stats_answer
step stats-say-degraded stats_degraded
step health-degraded bn_health_says $VOLUME "$TARGET" "DEGRADED/PathsFailed"
step storage-degraded bn_storage_health_says "STORAGE_DEGRADED/IscsiPathsFailed"
step gauge-one-failed eval 'bn_paths_gauge $VOLUME failed 1 && bn_paths_gauge $VOLUME serving 1'
step status-one-failed status_says_one_failed
step restore-portal  restore_path
step io-after        io_goes_on
step left-to-iscsid  left_to_iscsid_logged
step before-logout   before_logout
step logout-portal-2 log_out_portal_2
step relogged-in     repaired_within_two_intervals
step relogin-logged  relogin_logged
step sessions-counted sessions_counted
step portal-1-untouched portal_1_untouched
step io-after-relogin eval 'bn_io_goes_on "$LOGGED_OUT_AT" "the repair"'
step log-out-every-session log_out_every_session
step all-relogged-in all_repaired_within_two_intervals
step all-gone-logged all_gone_logged
step io-after-all-gone eval 'bn_io_goes_on "$ALL_GONE_AT" "the repair of every session"'
step file-after-all-gone eval 'bn_verify_file "$TARGET/before-logout" "$FILE_SUM"'
step restart-iscsid  restart_iscsid
step same-sessions   same_sessions_after_iscsid
step io-after-iscsid eval 'bn_io_goes_on "$(vm_now_ms)" "iscsid restarted"'
step restart-target  restart_target
step target-paths-back paths_back_after_target
step io-after-target eval 'bn_io_goes_on "$TARGET_DOWN_AT" "the target restarted"'
step nothing-logged-out nothing_logged_out
step stop-writer     bn_writer_stop
step file-intact     eval 'bn_verify_file "$TARGET/before-logout" "$FILE_SUM"'
step stats-healthy   stats_answer
step health-healthy  bn_health_says $VOLUME "$TARGET" healthy
step storage-healthy bn_storage_health_says healthy
step gauge-all-serving eval 'bn_paths_gauge $VOLUME failed 0 && bn_paths_gauge $VOLUME serving 2'
step unpublish       csi unpublish $VOLUME "$TARGET"
step unstage         csi unstage $VOLUME "$STAGING"
step logged-out      eval 'bn_target_released "$IQN" && vm_leftovers'
step target-delete   bn_target_delete $TID
step map-queues-unset map_queues_unset
bn_end
