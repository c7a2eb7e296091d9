#!/bin/bash
# iscsi-fs: filesystem and block volumes over two paths, through the plugin's own iscsi transport.
#
# One tgt target with three LUNs (320 MB, 320 MB, 64 MB) on both portals. Nothing is logged in or scanned
# by hand: each NodeStageVolume carries targetPortal/portals/iqn/lun/wwid, and the plugin makes the node
# records, logs in once per portal, scans that LUN only, verifies the WWIDs and uses the multipath map.
#
#   LUN 1, ext4 and LUN 2, xfs: stage, publish, write 8 MiB (fsync, sha256), unpublish, unstage; the
#     sessions must be logged out and the records deleted (no other LUN of the target is staged); stage
#     again (a new login), publish, the checksum must be unchanged (caches dropped), and down again.
#   Before the first unpublish, each filesystem is grown online: the LUN's file grows by 64 MB and tgtd
#     serves it again at that size; NodeExpandVolume rescans the paths and the map and grows the filesystem
#     by descriptor (ext4: EXT4_IOC_RESIZE_FS, xfs: XFS_IOC_FSGROWFSDATA on the staging mount; the guest's
#     plugin is full root, so ext4 has CAP_SYS_RESOURCE): the reply must be the new size, the filesystem
#     must be larger by most of it (statfs, before and after), and the checksum is verified after restage.
#   LUN 3, block: stage and publish as a raw block device, write 4 MiB through the published file with
#     O_DIRECT, read it back through the file and from the LUN's backing file on the "array" side.
#
# The node must be clean at the end: no sd or dm device, session, node record or mount.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=11
IQN=iqn.2024-01.dev.blocknode:fs
declare -A SUM

# The staged volume is a mount of a 2-path map of the expected LUN at the staging path, and the node
# sees that LUN (both paths) and no other, through exactly one session per portal with manual records.
check_staged_fs() {
  local volume=$1 fs=$2 lun=$3 staging dm devices
  staging=$(staging_of "$volume")
  [[ $(findmnt -rn -o FSTYPE --mountpoint "$staging") == "$fs" ]] || { echo "$staging is not $fs" >&2; return 1; }
  dm=$(bn_dm_of_mount "$staging") || return
  bn_expect_map "$dm" "$(bn_wwid $TID "$lun")" 2 || return
  bn_expect_sessions "$IQN" 2 || return
  bn_expect_records "$IQN" || return
  devices=$(bn_scsi_devices)
  [[ $(wc -l <<<"$devices") == 2 && $(grep -c ":0:0:$lun\$" <<<"$devices") == 2 ]] ||
    { echo "SCSI devices are [$(echo $devices)], expected LUN $lun on two hosts only" >&2; return 1; }
}

# fs_bytes PATH: the size of the filesystem mounted at PATH (statfs blocks x fragment size).
fs_bytes() { stat -f -c '%b %S' "$1" | awk '{print $1 * $2}'; }

# expand_checks VOLUME LUN STAGING TARGET BEFORE: NodeExpandVolume answers the LUN's new size, and the
# filesystem grew by at least 90% of the 64 MB added.
expand_checks() {
  local volume=$1 lun=$2 staging=$3 target=$4 before=$5 want after
  want=$(stat -c %s "$(bn_lun_file $TID "$lun")")
  csi expand "$volume" "$target" "$staging" || return
  [[ $CSI_REPLY == *" capacity=$want" ]] || { echo "expand replied [$CSI_REPLY], the LUN is $want bytes" >&2; return 1; }
  after=$(fs_bytes "$target")
  echo "filesystem of $volume: $before -> $after bytes (LUN $want)"
  (( after >= before + 64 * 1024 * 1024 * 9 / 10 )) || { echo "the filesystem did not grow enough" >&2; return 1; }
  [[ $(fs_bytes "$staging") == "$after" ]] || { echo "the staging mount shows another size" >&2; return 1; }
}

not_mounted() { ! findmnt -rn --mountpoint "$1" >/dev/null; }

released() {
  not_mounted "$1" && bn_target_released "$IQN" && vm_leftovers
}

fs_cycle() {
  local fs=$1 lun=$2 volume=fs-$1 staging target ctx
  staging=$(staging_of "$volume"); target=$(target_of "$volume")
  ctx=$(bn_iscsi_ctx "$IQN" "$lun" "$(bn_wwid $TID "$lun")")
  step "stage-$fs"            csi stagex "$volume" "$staging" "$fs" $ctx
  step "staged-$fs-checks"    check_staged_fs "$volume" "$fs" "$lun"
  bn_attach_timeline "$volume"
  step "publish-$fs"          csi publishx "$volume" "$staging" "$target" "$fs"
  step "write-fsync-$fs"      eval 'SUM[$fs]=$(bn_write_file "$target/data" 8) && [[ -n ${SUM[$fs]} ]]'
  local before; before=$(fs_bytes "$target")
  step "grow-lun-$fs"         grow_lun "$lun" 64 "$target"
  step "expand-$fs"           expand_checks "$volume" "$lun" "$staging" "$target" "$before"
  step "unpublish-$fs"        csi unpublish "$volume" "$target"
  step "unstage-$fs"          csi unstage "$volume" "$staging"
  step "logged-out-$fs"       released "$staging"
  step "restage-$fs"          csi stagex "$volume" "$staging" "$fs" $ctx
  step "restaged-$fs-checks"  check_staged_fs "$volume" "$fs" "$lun"
  bn_attach_timeline "$volume"
  step "republish-$fs"        csi publishx "$volume" "$staging" "$target" "$fs"
  step "verify-sha256-$fs"    bn_verify_file "$target/data" "${SUM[$fs]}"
  step "unpublish-2-$fs"      csi unpublish "$volume" "$target"
  step "unstage-2-$fs"        csi unstage "$volume" "$staging"
  step "logged-out-2-$fs"     released "$staging"
}

# ------------------------------------------------------------------------------------------ block

check_staged_block() {
  local target=$1 dm
  [[ -b $target ]] || { echo "$target is not a block device" >&2; return 1; }
  dm=$(readlink -f "/dev/block/$(stat -c '%Hr:%Lr' "$target")")
  [[ $dm == /dev/dm-* ]] || { echo "$target is $dm, not a dm device" >&2; return 1; }
  bn_expect_map "${dm#/dev/}" "$(bn_wwid $TID 3)" 2 && bn_expect_sessions "$IQN" 2
}

# -------------------------------------------------------------------------------------------- run

bn_begin
step target-create vm_target_create $TID "$IQN" 320 320 64
step plugin-ready  bn_plugin_ready

fs_cycle ext4 1
fs_cycle xfs 2

BLOCK_STAGING=$(block_staging_of blk)
BLOCK_TARGET=$(block_target_of blk)
step stage-block        csi stagex blk "$BLOCK_STAGING" block $(bn_iscsi_ctx "$IQN" 3 "$(bn_wwid $TID 3)")
bn_attach_timeline blk
step publish-block      csi publishx blk "$BLOCK_STAGING" "$BLOCK_TARGET" block
step block-checks       check_staged_block "$BLOCK_TARGET"
step write-raw-direct   bn_write_raw "$BLOCK_TARGET"
step read-raw-back      bn_read_raw "$BLOCK_TARGET" "$(bn_lun_file $TID 3)"
step unpublish-block    csi unpublish blk "$BLOCK_TARGET"
step unstage-block      csi unstage blk "$BLOCK_STAGING"
step logged-out-block   eval 'bn_target_released "$IQN" && vm_leftovers'
step target-delete      bn_target_delete $TID
rm -f "$BN_RAW"
bn_end
