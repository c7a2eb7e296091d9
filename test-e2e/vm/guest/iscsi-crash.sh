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
# An encrypted volume (LUN 2, volume_context encryption: luks2, the passphrase in the stage's secrets) adds
# the LUKS2 steps, in two cycles (53 s and 37 s on a quiet host, the plain ones 37-51 s each: about 90 s more
# for the boot, 250 s in all): on the blank LUN, the plugin dies after
# luksFormat, then in the retried stage after the mapping is open (a retry may die at the cycle's next point
# too), then in unstage after the mapping is closed; the restage of that volume dies after the open again
# (its data must be there, so nothing was formatted over) and in unstage once UNSTAGING is recorded (the start's
# recovery closes the mapping). Then no dm-crypt mapping is left either (vm_leftovers: no dm device at all).
# A cycle leaves the plugin running: its last restart is armed for the next cycle's first point already.
# Last, the repair loop's two sweeps, both in one restart after two dead stages (sweeps below): the orphan session
# and node record a start-up undo could not log out (iscsid down), and a leftover LUN's disks and map.
#
# vm-limit: 1300  (its boot's, plus 100 s: 357-545 s in warm make test runs on an older machine; on a fresh one,
#                  beside the Maven run and the first build of Kubernetes, 4 of its 6 cycles took 730 s)
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
STAGE_EXTRA=()    # more stage arguments: the encrypted volume's context key and secret
# Random each run, never printed; listed in secret-canaries, so the host fails the run if it is in any result.
KEY=ck$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 30)

# One call of the lifecycle; the names are the cycle's operations.
op_stage()     { csi stagex $VOLUME "$STAGING" ext4 $CTX ${STAGE_EXTRA[@]+"${STAGE_EXTRA[@]}"}; }
op_publish()   { csi publishx $VOLUME "$STAGING" "$TARGET" ext4; }
op_data()      {
  if [[ -n $SUM ]]; then bn_verify_file "$TARGET/data" "$SUM" || return; fi
  SUM=$(bn_write_file "$TARGET/data" 2) && [[ -n $SUM ]]
}
op_unpublish() { csi unpublish $VOLUME "$TARGET"; }
op_unstage()   { csi unstage $VOLUME "$STAGING"; }

NEXT_CYCLE=""     # the first point of the next cycle, if any
PLUGIN_ARMED=""   # the point the running plugin is armed for
# Starts the plugin armed for the next point of the cycle; when none is left, for the next cycle's first point (a
# stage's: the rest of this cycle, an unstage's retry, never reaches it), so that the next cycle needs no restart.
start_armed() {
  BN_PLUGIN_ENV=()
  PLUGIN_ARMED=${ARMED[0]:-$NEXT_CYCLE}
  [[ -n $PLUGIN_ARMED ]] && BN_PLUGIN_ENV=("BLOCKNODE_CRASH_AT=$PLUGIN_ARMED")
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

# crash_cycle POINT... [-- NEXT]: one lifecycle with the plugin killed at each POINT in turn; NEXT is the next
# cycle's first point. The plugin is left running, armed for NEXT (or not armed).
crash_cycle() {
  local op
  ARMED=()
  while (($#)) && [[ $1 != -- ]]; do ARMED+=("$1"); shift; done
  NEXT_CYCLE=${2:-}
  if [[ -z $PLUGIN_PID ]]; then
    start_armed || return
  elif [[ $PLUGIN_ARMED != "${ARMED[0]}" ]]; then
    echo "the running plugin is armed for ${PLUGIN_ARMED:-no point}, not ${ARMED[0]}" >&2; return 1
  fi
  for op in stage publish data unpublish unstage; do
    local retried=no
    # The retry may die too, at the cycle's next point: each death must be at the point armed for it.
    while ! "op_$op"; do
      [[ $op != data ]] || return 1
      died_at_point || return
      retried=yes
    done
    [[ $retried == no ]] || echo "  retried $op after the restart: ${CSI_REPLY%% *}"
  done
  ((${#ARMED[@]} == 0)) || { echo "crash point(s) never reached: ${ARMED[*]}" >&2; return 1; }
  bn_target_released "$IQN" && vm_leftovers || return
  [[ -z $(ls -A "$STATE/volumes" 2>/dev/null) ]] || { echo "staging records left: $(ls "$STATE/volumes")" >&2; return 1; }
}

# The encrypted volume: LUN 2 with luks2, its own staging path and data.
luks_volume() {
  printf '%s\n' "$KEY" > "$VM_RESULTS/secret-canaries"
  modprobe -a dm_crypt || return
  VOLUME=vol-crash-luks
  STAGING=$(staging_of $VOLUME)
  TARGET=$(target_of $VOLUME)
  CTX=$(bn_iscsi_ctx "$IQN" 2 "$(bn_wwid $TID 2)")
  STAGE_EXTRA=(encryption=luks2 "secret:encryptionPassphrase=$KEY")
  SUM=""
}

# The repair loop's two sweeps, in one restart of the plugin with a short --repair-interval (SWEEP_INTERVAL s) after
# two stages died at stage.attached (each a start of its own, armed):
#   leftover LUN: vol-left's stage (LUN 2, both portals) dies once LUN 2's two disks and map are in place and its scans
#     journaled, and its record is lost (deleted, as a wiped state dir loses it): nothing names LUN 2 any more and no
#     start-up recovery knows of it. The test holds LUN 2's map open (a file descriptor, as a raw block user would):
#     the sweep must keep it and report it (the log, blocknode_path_sweep_kept). Once the descriptor is closed, a
#     pass must flush the map and delete both disks (within two intervals).
#   orphan session: vol-orphan's stage (LUN 3, both portals; the repair loop off in that start, so no sweep runs
#     before the restart) dies after its logins and scans, and iscsid is down while the plugin restarts, so the
#     start's undo of that attach cannot log out of PORTAL1, which no recorded volume uses; its record is deleted all
#     the same (the undo is best effort), which leaves a session and a node record that no record names. iscsid is
#     started again at once; the session still carries LUN 2's held disk, so the sweep must keep it (a session with
#     a disk is never logged out) until LUN 2 is swept, then log it out and delete its node record, proven
#     blocknode's by its login journal.
#   vol-keep, LUN 1 staged through the target's second portal only before both crashes (both dead stages shared its
#     session), keeps that session (the same sessionN), its map, its disk and its data throughout; no sweep names it.
# Cost: four plugin starts, three stages, an unstage and the waits: 294 s on a host at load 17-20 (LUN 2 swept 18 s
# and PORTAL1 27 s after the map was closed, 5 s interval); each sweep in a restart of its own cost three plugin
# starts, two stages and an unstage: 154-187 s and 299 s at load 12-15. 66 s at load 0.2-4 (swept 2.7 s and 3.6 s).
SWEEP_INTERVAL=5
sweeps() {
  local keep=vol-keep keep_staging keep_session keep_dm keep_sum map holder t0 took kept args=${GUEST_PLUGIN_ARGS:-}
  keep_staging=$(staging_of $keep)
  [[ -n $PLUGIN_PID && -z $PLUGIN_ARMED ]] || { echo "no unarmed plugin is running" >&2; return 1; }
  csi stagex $keep "$keep_staging" ext4 "targetPortal=$PORTAL2" "iqn=$IQN" lun=1 "wwid=$(bn_wwid $TID 1)" || return
  keep_sum=$(bn_write_file "$keep_staging/keep" 1) && [[ -n $keep_sum ]] || return
  keep_dm=$(bn_dm_of_mount "$keep_staging") && bn_expect_map "$keep_dm" "$(bn_wwid $TID 1)" 1 || return
  keep_session=$(vm_iscsi_session "$IQN" "$PORTAL2") || return
  bn_plugin_stop || return
  stage_dies_attached vol-left 2 || return
  rm -f "$STATE/volumes/$(printf '%s' vol-left | sha256sum | cut -d' ' -f1).pb"
  [[ $(ls "$STATE/volumes" | wc -l) == 1 ]] || { echo "staging records: $(ls "$STATE/volumes")" >&2; return 1; }
  map=$(vm_mpath_dm "$(bn_wwid $TID 2)") && bn_expect_map "$map" "$(bn_wwid $TID 2)" 2 || return
  echo "  leftover: LUN 2 as $map over $(echo $(ls /sys/block/$map/slaves)), no staging record names it"
  GUEST_PLUGIN_ARGS="$args --repair-interval=0"
  stage_dies_attached vol-orphan 3 || { GUEST_PLUGIN_ARGS=$args; return 1; }
  GUEST_PLUGIN_ARGS=$args
  vm_iscsi_session "$IQN" "$PORTAL1" >/dev/null || { echo "the dead stages left no session on $PORTAL1" >&2; return 1; }
  iscsiadm -k 0 >/dev/null 2>&1
  vm_wait "iscsid to exit" 60 sh -c '! pidof iscsid >/dev/null' || return
  # The map held open by a process of its own: a descriptor of this shell would be inherited by the plugin started
  # next, which would then hold the map open itself for as long as it runs.
  sleep 600 9<>"/dev/$map" &
  holder=$!
  GUEST_PLUGIN_ARGS="$args --repair-interval=${SWEEP_INTERVAL}s"
  start_armed || { GUEST_PLUGIN_ARGS=$args; kill "$holder"; return 1; }
  GUEST_PLUGIN_ARGS=$args
  if ! sweeps_keep_what_is_held "$map" "$holder"; then kill "$holder"; return 1; fi
  kill "$holder" && wait "$holder" 2>/dev/null
  t0=$(vm_now_ms)
  vm_wait "the sweep to remove LUN 2's map and disks" 60 lun_gone 2 || return
  took=$(($(vm_now_ms) - t0))
  echo "  LUN 2 swept ${took} ms after the map was closed (interval ${SWEEP_INTERVAL} s)"
  vm_wait "the sweep to log out of $PORTAL1 and delete its node record" 120 orphan_gone || return
  took=$(($(vm_now_ms) - t0))
  echo "  $PORTAL1 swept ${took} ms after the map was closed"
  grep -F "leftover sweep: flushed multipath map" "$VM_RESULTS/plugin.log" | grep -qF "$map" ||
    { echo "no log line for the sweep of $map" >&2; return 1; }
  grep -F "orphan sweep: logged out of" "$VM_RESULTS/plugin.log" | grep -qF "via $PORTAL1 " &&
    grep -F "orphan sweep: deleted the node record of" "$VM_RESULTS/plugin.log" | grep -qF "via $PORTAL1 " ||
    { echo "no log line for each orphan sweep action" >&2; return 1; }
  ! grep -F "orphan sweep:" "$VM_RESULTS/plugin.log" | grep -qF "via $PORTAL2 " ||
    { echo "the sweep touched $PORTAL2, which $keep uses" >&2; return 1; }
  [[ $(vm_iscsi_session "$IQN" "$PORTAL2") == "$keep_session" ]] ||
    { echo "$keep's session on $PORTAL2 is not $keep_session any more" >&2; return 1; }
  bn_expect_map "$keep_dm" "$(bn_wwid $TID 1)" 1 && lun_gone 3 || return
  bn_verify_file "$keep_staging/keep" "$keep_sum" || return
  csi unstage $keep "$keep_staging" || return
  bn_target_released "$IQN" && vm_leftovers || return
  [[ -z $(ls -A "$STATE/volumes" 2>/dev/null) ]] || { echo "staging records left: $(ls "$STATE/volumes")" >&2; return 1; }
  [[ -z $(ls -A "$STATE/scsi-scans" 2>/dev/null) ]] ||
    { echo "scan journal entries left: $(ls "$STATE/scsi-scans")" >&2; return 1; }
}

# sweeps_keep_what_is_held MAP HOLDER: the plugin just started (iscsid down) undid vol-orphan's attach but could not log
# out of PORTAL1; then, iscsid back, its sweep reports MAP open and leaves it, and PORTAL1's session, which carries
# one of MAP's disks, as they are.
sweeps_keep_what_is_held() {
  grep -q "startup: finished the interrupted attach of volume vol-orphan" "$VM_RESULTS/plugin.log" ||
    { echo "the start did not undo the interrupted attach of vol-orphan" >&2; return 1; }
  [[ $(ls "$STATE/volumes" | wc -l) == 1 ]] || { echo "staging records: $(ls "$STATE/volumes")" >&2; return 1; }
  vm_iscsi_session "$IQN" "$PORTAL1" >/dev/null ||
    { echo "the start logged out of $PORTAL1 with iscsid down: no orphan to sweep" >&2; return 1; }
  echo "  orphan left: $(vm_iscsi_session "$IQN" "$PORTAL1") on $PORTAL1, no staging record names it"
  vm_iscsid_start || return
  vm_wait "the sweep to report LUN 2's open map" 60 grep -qF "$(bn_wwid $TID 2)) is open (1 opener(s))" \
    "$VM_RESULTS/plugin.log" || return
  kept=$(curl -sf --max-time 10 "http://$BN_METRICS/metrics" | awk '$1 == "blocknode_path_sweep_kept" {print $2}')
  echo "  kept while open: blocknode_path_sweep_kept ${kept:-absent}"
  bn_expect_map "$1" "$(bn_wwid $TID 2)" 2 && awk -v k="${kept:-0}" 'BEGIN {exit !(k >= 1)}' ||
    { echo "the open map was touched, or not reported" >&2; return 1; }
  vm_iscsi_session "$IQN" "$PORTAL1" >/dev/null ||
    { echo "the sweep logged out of $PORTAL1 while it carried a disk of the open map" >&2; return 1; }
  kill -0 "$2" 2>/dev/null || { echo "the process holding $1 open is gone" >&2; return 1; }
}

# stage_dies_attached VOLUME LUN: a plugin armed at stage.attached is started; the stage of VOLUME (LUN of the target,
# both portals) dies once that LUN is attached, before its record names it.
stage_dies_attached() {
  local rc=0
  VOLUME=$1 STAGING=$(staging_of "$1") CTX=$(bn_iscsi_ctx "$IQN" "$2" "$(bn_wwid $TID "$2")") STAGE_EXTRA=()
  ARMED=(stage.attached) && start_armed || return
  if op_stage; then echo "the stage of $VOLUME did not die at stage.attached" >&2; return 1; fi
  vm_wait "the plugin to exit at stage.attached" 60 sh -c "! kill -0 $PLUGIN_PID 2>/dev/null" || return
  wait "$PLUGIN_PID" || rc=$?
  PLUGIN_PID=""
  bn_client_stop
  ARMED=()
  [[ $rc == "$CRASH_EXIT" ]] || { echo "the plugin exited $rc, expected $CRASH_EXIT" >&2; return 1; }
}

# lun_gone N: no map of LUN N and no SCSI device at LUN N of any host.
lun_gone() {
  ! vm_mpath_dm "$(bn_wwid $TID "$1")" >/dev/null 2>&1 && ! bn_scsi_devices | grep -q ":0:0:$1\$"
}

# No session of the target on portal 1 and no node record for it.
orphan_gone() {
  ! vm_iscsi_session "$IQN" "$PORTAL1" >/dev/null &&
    [[ -z $(find "/etc/iscsi/nodes/$IQN" -mindepth 1 -maxdepth 1 -name "${PORTAL1%:*},*" 2>/dev/null) ]]
}

bn_begin
step target-create   vm_target_create $TID "$IQN" 64 64 64
step plugin-ready    bn_plugin_ready
# bn_begin's plugin is not armed: the first cycle starts its own; each later one uses the plugin the one before
# restarted last, armed for it.
step plugin-stop-0   bn_plugin_stop
step crash-formatted-and-unstage-recorded   crash_cycle stage.formatted unstage.recorded -- stage.intent-recorded
step crash-intent-and-unstage-unmounted     crash_cycle stage.intent-recorded unstage.unmounted -- stage.attached
step crash-attached-and-unstage-detached    crash_cycle stage.attached unstage.detached -- stage.crypt-formatted
step luks-volume     luks_volume
step crash-crypt-formatted-opened-closed    crash_cycle stage.crypt-formatted stage.crypt-opened unstage.crypt-closed -- stage.crypt-opened
step crash-crypt-reopened-and-unstage-recorded  crash_cycle stage.crypt-opened unstage.recorded
step sweeps          sweeps
step target-delete   bn_target_delete $TID
bn_end
