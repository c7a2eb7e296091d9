#!/bin/bash
# iscsi-crash: the plugin dies (Runtime.halt, as kill -9) at the lifecycle's SAN-specific crash points,
# is restarted, and kubelet's retries must converge: the volume usable with its data, then fully gone.
#
# The crash points are the plugin's own (faults/CrashPoint; armed by BLOCKNODE_CRASH_AT in a test only).
# The host tier's crash matrix runs every point over a loop device; here the ones where the iSCSI
# transport's work is half done: before the attach (an ATTACHING record and nothing else), after the
# logins and scans but before the record names the device, after mkfs; in unstage after the record says
# UNSTAGING, after the unmount, and after the transport detached (sessions gone, record left). The other
# points (record written, mounted, publish and unpublish) do not depend on the transport once the device
# is there: the host tier covers them, and each cycle here costs about a minute of emulated guest. Each
# cycle is a whole lifecycle of one 2-path ext4 LUN, with one crash in stage and one in unstage:
#   start the plugin armed for the cycle's first point; stage, publish, check + write data, unpublish,
#   unstage. The call during which the plugin dies fails; the plugin must have exited with the crash
#   code after announcing that point. It is restarted (armed for the cycle's next point, if any) and the
#   same call is retried, then the lifecycle goes on. At the end of each cycle: no session, node record,
#   disk, map, mount or staging record.
# The LUN is formatted once (first cycle, which crashes right after mkfs); every later cycle must find
# the file the previous one wrote with the same checksum: no reformat, no lost write, across all crashes.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=17
IQN=iqn.2024-01.dev.blocknode:crash
VOLUME=vol-crash
STAGING=$(staging_of $VOLUME)
TARGET=$(target_of $VOLUME)
CTX=$(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 1)")
CRASH_EXIT=86
SUM=""
ARMED=()          # the cycle's crash points not reached yet, in order

# One call of the lifecycle; the names are the cycle's operations.
op_stage()     { csi stagex $VOLUME "$STAGING" ext4 $CTX; }
op_publish()   { csi publishx $VOLUME "$STAGING" "$TARGET" ext4; }
op_data()      {
  if [[ -n $SUM ]]; then bn_verify_file "$TARGET/data" "$SUM" || return; fi
  SUM=$(bn_write_file "$TARGET/data" 2) && [[ -n $SUM ]]
}
op_unpublish() { csi unpublish $VOLUME "$TARGET"; }
op_unstage()   { csi unstage $VOLUME "$STAGING"; }

# Starts the plugin armed for the next point of the cycle (or not armed when none is left).
start_armed() {
  BN_PLUGIN_ENV=()
  ((${#ARMED[@]})) && BN_PLUGIN_ENV=("BLOCKNODE_CRASH_AT=${ARMED[0]}")
  bn_plugin_start && bn_plugin_ready
}

# The call failed: the plugin must be dead at ARMED[0], having said so. Then it is restarted.
died_at_point() {
  local point=${ARMED[0]:-} rc=0
  [[ -n $point ]] || { echo "a call failed with no crash point armed: $CSI_REPLY" >&2; return 1; }
  vm_wait "the plugin to exit at $point" 60 sh -c "! kill -0 $PLUGIN_PID 2>/dev/null" || return
  wait "$PLUGIN_PID" || rc=$?
  PLUGIN_PID=""
  bn_client_stop
  [[ $rc == "$CRASH_EXIT" ]] || { echo "the plugin exited $rc, expected $CRASH_EXIT (crash at $point)" >&2; return 1; }
  grep -qF "crash point $point reached" "$VM_RESULTS/plugin.log" ||
    { echo "the plugin did not announce crash point $point" >&2; return 1; }
  echo "  died at $point ($(bn_sessions_of "$IQN") session(s), $(ls /sys/block | grep -c '^sd') disk(s), $(ls /sys/block | grep -c '^dm-') map(s) left on the node)"
  ARMED=("${ARMED[@]:1}")
  start_armed
}

# crash_cycle POINT...: one lifecycle with the plugin killed at each POINT in turn.
crash_cycle() {
  local op
  ARMED=("$@")
  start_armed || return
  for op in stage publish data unpublish unstage; do
    if ! "op_$op"; then
      [[ $op != data ]] || return 1
      died_at_point || return
      "op_$op" || return
      echo "  retried $op after the restart: ${CSI_REPLY%% *}"
    fi
  done
  ((${#ARMED[@]} == 0)) || { echo "crash point(s) never reached: ${ARMED[*]}" >&2; return 1; }
  bn_plugin_stop || return
  bn_target_released "$IQN" && vm_leftovers || return
  [[ -z $(ls -A "$STATE/volumes" 2>/dev/null) ]] || { echo "staging records left: $(ls "$STATE/volumes")" >&2; return 1; }
}

bn_begin
step target-create   vm_target_create $TID "$IQN" 64
step plugin-ready    bn_plugin_ready
# bn_begin's plugin is not armed: each cycle starts its own.
step plugin-stop-0   bn_plugin_stop
step crash-formatted-and-unstage-recorded   crash_cycle stage.formatted unstage.recorded
step crash-intent-and-unstage-unmounted     crash_cycle stage.intent-recorded unstage.unmounted
step crash-attached-and-unstage-detached    crash_cycle stage.attached unstage.detached
step plugin-restart  start_armed
step target-delete   bn_target_delete $TID
bn_end
