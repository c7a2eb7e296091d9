#!/bin/bash
# iscsi-shared-session: two LUNs of one target staged at the same time share one session per portal.
#
# The target has three LUNs; volumes A (LUN 1) and B (LUN 2) are staged by two NodeStageVolume calls
# made at once (GuestClient's "parallel": one thread each). Then:
#   - exactly two sessions (one per portal) and exactly two logins by the plugin (its iscsiadm record);
#   - targeted scans only: the node has the SCSI devices of LUNs 1 and 2 on both hosts and nothing
#     else; LUN 3 (exported to this initiator too) and LUN 0 (tgt's controller) must not appear, as
#     they would after a wildcard scan or an automatic one at login;
#   - each volume is mounted from a 2-path map of its own LUN;
#   - unstaging A keeps both sessions (B still uses them) and removes only LUN 1's devices; B still
#     writes and reads back (caches dropped);
#   - unstaging B, the last LUN of the target, logs both sessions out and deletes the records.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=12
IQN=iqn.2024-01.dev.blocknode:shared

STA=$(staging_of vol-a); TGA=$(target_of vol-a)
STB=$(staging_of vol-b); TGB=$(target_of vol-b)

stage_both() {
  csi parallel stagex vol-a "$STA" ext4 $(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 1)") \
             '&' stagex vol-b "$STB" ext4 $(bn_iscsi_ctx "$IQN" 2 "$(bn_wwid $TID 2)") || return
  echo "  replies: ${CSI_REPLY#ok }"
}

one_login_per_portal() {
  local logins p1 p2
  logins=$(bn_plugin_commands | grep -F -- ' --login ')
  p1=$(grep -cF -- "-p $PORTAL1 " <<<"$logins")
  p2=$(grep -cF -- "-p $PORTAL2 " <<<"$logins")
  echo "  logins by the plugin: $PORTAL1 $p1, $PORTAL2 $p2; records made (-o new): $(bn_plugin_commands | grep -cF -- ' -o new ')"
  [[ $p1 == 1 && $p2 == 1 ]] || { echo "expected exactly one login per portal" >&2; return 1; }
  bn_expect_sessions "$IQN" 2 && bn_expect_records "$IQN"
}

# bn_only_luns LUN...: the node's SCSI devices are exactly those LUNs on two hosts (the two sessions).
only_luns() {
  local devices lun want=$(( $# * 2 ))
  devices=$(bn_scsi_devices)
  echo "  SCSI devices: $(echo $devices)"
  [[ $(grep -c . <<<"$devices") == "$want" ]] || { echo "expected $want SCSI devices" >&2; return 1; }
  for lun in "$@"; do
    [[ $(grep -c ":0:0:$lun\$" <<<"$devices") == 2 ]] || { echo "LUN $lun is not on both hosts" >&2; return 1; }
  done
  ! grep -qE ':0:0:(0|3)$' <<<"$devices" || { echo "an unrequested LUN (0 or 3) was scanned in" >&2; return 1; }
}

maps_ok() {
  local dm
  dm=$(bn_dm_of_mount "$STA") && bn_expect_map "$dm" "$(bn_wwid $TID 1)" 2 || return
  dm=$(bn_dm_of_mount "$STB") && bn_expect_map "$dm" "$(bn_wwid $TID 2)" 2
}

SUM_B=""
b_writes() { SUM_B=$(bn_write_file "$TGB/data" 4) && [[ -n $SUM_B ]]; }
b_works() {
  local sum2
  sum2=$(bn_write_file "$TGB/more" 2) || return
  bn_verify_file "$TGB/data" "$SUM_B" && bn_verify_file "$TGB/more" "$sum2"
}
a_written() { bn_write_file "$TGA/data" 4 >/dev/null; }
kept_sessions() {
  bn_expect_sessions "$IQN" 2 && bn_expect_records "$IQN" || return
  local dm
  dm=$(bn_dm_of_mount "$STB") && bn_expect_map "$dm" "$(bn_wwid $TID 2)" 2 || return
  ! findmnt -rn --mountpoint "$STA" >/dev/null || { echo "$STA is still mounted" >&2; return 1; }
  echo "  plugin: $(grep -c 'keeping the session' "$VM_RESULTS/plugin.log") \"keeping the session\" line(s)"
}

bn_begin
step target-create          vm_target_create $TID "$IQN" 64 64 64
step plugin-ready           bn_plugin_ready
step stage-a-b-concurrently stage_both
bn_attach_timeline vol-a
bn_attach_timeline vol-b
step one-login-per-portal   one_login_per_portal
step targeted-scans-only    only_luns 1 2
step two-maps               maps_ok
step publish-a              csi publishx vol-a "$STA" "$TGA" ext4
step publish-b              csi publishx vol-b "$STB" "$TGB" ext4
step write-a                a_written
step write-b                b_writes
step unpublish-a            csi unpublish vol-a "$TGA"
step unstage-a              csi unstage vol-a "$STA"
step sessions-kept          kept_sessions
step only-lun-2-left        only_luns 2
step b-still-works          b_works
step unpublish-b            csi unpublish vol-b "$TGB"
step unstage-b              csi unstage vol-b "$STB"
step both-logged-out        eval 'bn_target_released "$IQN" && vm_leftovers'
step target-delete          bn_target_delete $TID
bn_end
