#!/bin/bash
# iscsi-lost-record: NodeUnstageVolume of a volume whose staging record is gone (a wiped state dir).
#
# Volumes A (LUN 1) and B (LUN 2) of one target are staged (ext4, one session per portal shared by both).
# A's record file is deleted. Unstaging A must still take down everything of LUN 1, the plugin rebuilding
# what it needs from the staging mount and sysfs (the map under the mount, its slaves, their SCSI hosts,
# the iSCSI sessions of those hosts): LUN 1's map and path devices go, the sessions stay (B still uses
# them), B's map is untouched and B still writes. Unstaging B (recorded) then logs both sessions out, and
# the node must be clean.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=16
IQN=iqn.2024-01.dev.blocknode:lost

STA=$(staging_of vol-a); TGB=$(target_of vol-b)
STB=$(staging_of vol-b)
DM_A=""

record_of() { echo "$STATE/volumes/$(printf '%s' "$1" | sha256sum | cut -d' ' -f1).pb"; }

lose_record_of_a() {
  DM_A=$(bn_dm_of_mount "$STA") || return
  bn_expect_map "$DM_A" "$(bn_wwid $TID 1)" 2 || return
  [[ -f $(record_of vol-a) ]] || { echo "no record file $(record_of vol-a)" >&2; return 1; }
  # The plugin keeps its records in memory too (it is their only writer): the record is lost the way a
  # wiped state dir loses it, across a restart.
  bn_plugin_stop || return
  rm -f "$(record_of vol-a)"
  echo "  deleted $(record_of vol-a); vol-a is mounted from $DM_A"
  bn_plugin_start && bn_plugin_ready
}

lun_1_gone_sessions_kept() {
  local devices
  udevadm settle --timeout=30
  ! findmnt -rn --mountpoint "$STA" >/dev/null || { echo "$STA is still mounted" >&2; return 1; }
  [[ ! -e /sys/block/$DM_A ]] || { echo "LUN 1's map $DM_A is still there" >&2; return 1; }
  devices=$(bn_scsi_devices)
  echo "  SCSI devices: $(echo $devices)"
  ! grep -q ':0:0:1$' <<<"$devices" || { echo "a path device of LUN 1 is left" >&2; return 1; }
  [[ $(grep -c ':0:0:2$' <<<"$devices") == 2 ]] || { echo "LUN 2 is not on both hosts any more" >&2; return 1; }
  bn_expect_sessions "$IQN" 2 && bn_expect_records "$IQN" || return
  local dm
  dm=$(bn_dm_of_mount "$STB") && bn_expect_map "$dm" "$(bn_wwid $TID 2)" 2 || return
  [[ ! -e $(record_of vol-a) ]] || { echo "the rebuilt record of vol-a was left" >&2; return 1; }
  local rebuilt
  rebuilt=$(grep -c 'rebuilt its record from the host' "$VM_RESULTS/plugin.log")
  echo "  plugin: $rebuilt \"rebuilt its record\" line(s)"
  ((rebuilt >= 1)) || { echo "the plugin did not rebuild vol-a's record from the host" >&2; return 1; }
}

b_works() {
  local sum
  sum=$(bn_write_file "$TGB/data" 2) && bn_verify_file "$TGB/data" "$sum"
}

bn_begin
step target-create          vm_target_create $TID "$IQN" 64 64
step plugin-ready           bn_plugin_ready
step stage-a                csi stagex vol-a "$STA" ext4 $(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 1)")
step stage-b                csi stagex vol-b "$STB" ext4 $(bn_iscsi_ctx "$IQN" 2 "$(bn_wwid $TID 2)")
step publish-b              csi publishx vol-b "$STB" "$TGB" ext4
step lose-record-of-a       lose_record_of_a
step unstage-a-no-record    csi unstage vol-a "$STA"
step lun-1-gone-sessions-kept lun_1_gone_sessions_kept
step unstage-a-retry        csi unstage vol-a "$STA"
step b-still-works          b_works
step unpublish-b            csi unpublish vol-b "$TGB"
step unstage-b              csi unstage vol-b "$STB"
step both-logged-out        eval 'bn_target_released "$IQN" && vm_leftovers'
step target-delete          bn_target_delete $TID
bn_end
