#!/bin/bash
# iscsi-wrong-lun: the identity check. A LUN number that now names another LUN (the array reused it)
# must not be formatted, mounted or handed out.
#
# The target has LUNs 1 and 2. NodeStageVolume asks for LUN 1 but with the WWID of LUN 2 (what the
# controller recorded for the volume): the plugin must refuse with FAILED_PRECONDITION, and neither
# LUN may have been written (the first MiB of both backing files still zero, and blkid -p finds no
# signature on the path devices if they are still there). A following NodeUnstageVolume (what kubelet
# does for a volume whose staging failed) must succeed and leave the node clean: no session, node
# record, disk or map of the refused LUN.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=13
IQN=iqn.2024-01.dev.blocknode:wrong
VOLUME=vol-w
STAGING=$(staging_of $VOLUME)

refused() {
  csi_fails FAILED_PRECONDITION stagex $VOLUME "$STAGING" ext4 $(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 2)") || return
  [[ $CSI_REPLY == *"$(bn_wwid $TID 1)"* || $CSI_REPLY == *"$(bn_naa $TID 1)"* ]] ||
    { echo "the refusal does not name the LUN found" >&2; return 1; }
}

untouched() {
  local lun disk
  ! findmnt -rn --mountpoint "$STAGING" >/dev/null || { echo "$STAGING is mounted" >&2; return 1; }
  for lun in 1 2; do
    cmp -s -n 1048576 "$(bn_lun_file $TID $lun)" /dev/zero ||
      { echo "the first MiB of LUN $lun is no longer zero" >&2; return 1; }
  done
  for disk in /sys/block/sd*; do
    [[ -e $disk ]] || continue
    if blkid -p "/dev/${disk##*/}" >/dev/null 2>&1; then
      echo "blkid -p finds a signature on ${disk##*/}: $(blkid -p "/dev/${disk##*/}")" >&2; return 1
    fi
  done
  echo "  after the refusal: $(bn_sessions_of "$IQN") session(s), $(bn_records_of "$IQN") record(s)," \
       "SCSI devices [$(echo $(bn_scsi_devices))], maps [$(ls /dev/mapper | grep -v control | tr '\n' ' ')]"
}

bn_begin
step target-create        vm_target_create $TID "$IQN" 64 64
step plugin-ready         bn_plugin_ready
step stage-wrong-wwid     refused
step nothing-written      untouched
step unstage-after-refusal csi unstage $VOLUME "$STAGING"
step refused-lun-released eval 'bn_target_released "$IQN" && vm_leftovers'
step take-down-leftovers  bn_take_down_leftovers
step target-delete        bn_target_delete $TID
bn_end
