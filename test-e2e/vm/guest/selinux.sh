#!/bin/bash
# selinux: kubelet's SELinux mount contexts (a CSIDriver with seLinuxMount: true) on a kernel running SELinux
# with Debian's reference policy, through the plugin's socket and its local transport on loop devices (the
# labels are the filesystem's and the LSM's: no SAN is needed to show them).
# vm-append: security=selinux
#
# The guest's kernel selects SELinux (security=selinux: Debian's default LSM is AppArmor) and the scenario loads
# the policy with load_policy, PERMISSIVE: the guest's root is the host's / over 9p with a tmpfs overlay, whose
# files carry no labels (unlabeled_t), and enforcing then denies the guest's own work (files made on the overlay,
# module loads, the JVM itself). A context= mount labels the filesystem the same in either mode; denials are
# only logged (dmesg). Debian's policy (bookworm) has no container module, so no container_file_t: the
# scenario uses svirt_image_t, the MCS-separated type of sVirt's images, at kubelet's shape of context
# (user:role:type:s0:cX,cY, in double quotes), and shows kubelet's own container_file_t refused cleanly.
#
# Parts, in order:
#   policy:   SELinux on, policy loaded, MCS levels there, both contexts valid and container_file_t not.
#   unknown:  a stage with context container_file_t (not in the policy: mount(2) says EINVAL) is
#             INVALID_ARGUMENT; the device is blank again, no record, nothing mounted.
#   fs:       for ext4 and xfs: stage with context A (the superblock's options hold it, the root is labelled),
#             publish with A; files, a directory and data made through the pod's path carry A; a stage with
#             context B is ALREADY_EXISTS naming A and B, and leaves the mount and the record as they were; a
#             publication with B is FAILED_PRECONDITION with nothing at its target; one with no context is
#             bound and shows A; it is unpublished.
#   restart:  the plugin restarted: re-stage and re-publish with A are OK (no second mount), B still refused.
#   block:    a raw block volume (CSI's block capability has no mount flags, so kubelet sends no context):
#             staged, published, 4 MiB through it with O_DIRECT and back; the device node keeps its label.
#   down:     unpublish, unstage; then ext4 staged again without a context: its files are no longer labelled A
#             (the context was the mount's, nothing of it was written to the filesystem); unstaged.
# At the end: nothing mounted under the scenario's kubelet root, no staging record, the loop devices detached.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

CTX_A=system_u:object_r:svirt_image_t:s0:c1,c2
CTX_B=system_u:object_r:svirt_image_t:s0:c3,c4
KUBELET_CTX=system_u:object_r:container_file_t:s0:c1,c2
LOOP_DIR=/srv/bn-selinux
declare -A LOOP=()
BLK=sel-blk

vol_of() { echo "sel-$1"; }
# A context as kubelet puts it in mount_flags (in double quotes: the categories hold a comma), for GuestClient.
flag_of() { echo "flag:context=\"$1\""; }

# ---------------------------------------------------------------------------------------------- setup

# Loop devices over sparse files on a tmpfs: ext4 and xfs (which wants 300 MB at least) and a raw block one.
make_loops() {
  mkdir -p "$LOOP_DIR" && { mountpoint -q "$LOOP_DIR" || mount -t tmpfs -o size=1g,mode=700 bn-selinux "$LOOP_DIR"; } ||
    return
  local name size
  for name in ext4:320 xfs:320 blk:64; do
    size=${name#*:}; name=${name%:*}
    truncate -s "${size}M" "$LOOP_DIR/$name.img" && LOOP[$name]=$(losetup -f --show "$LOOP_DIR/$name.img") || return
  done
  echo "  loop devices: ext4 ${LOOP[ext4]}, xfs ${LOOP[xfs]}, block ${LOOP[blk]}"
}

drop_loops() {
  local name rc=0
  for name in "${!LOOP[@]}"; do losetup -d "${LOOP[$name]}" || rc=1; unset "LOOP[$name]"; done
  mountpoint -q "$LOOP_DIR" && { umount "$LOOP_DIR" || rc=1; }
  return $rc
}

context_valid() { printf '%s' "$1" > /sys/fs/selinux/context 2>/dev/null; }

load_selinux_policy() {
  grep -qw selinux /sys/kernel/security/lsm 2>/dev/null || [[ -d /sys/fs/selinux ]] ||
    { echo "SELinux is not the kernel's LSM (security=selinux missing?)" >&2; return 1; }
  mountpoint -q /sys/fs/selinux || mount -t selinuxfs selinuxfs /sys/fs/selinux || return
  load_policy || return
  setenforce 0 || return
  [[ $(getenforce) == Permissive ]] || { echo "getenforce says $(getenforce)" >&2; return 1; }
  [[ $(cat /sys/fs/selinux/mls) == 1 ]] || { echo "the policy has no MLS/MCS levels" >&2; return 1; }
  context_valid "$CTX_A" && context_valid "$CTX_B" || { echo "the policy refuses $CTX_A or $CTX_B" >&2; return 1; }
  if context_valid "$KUBELET_CTX"; then
    echo "the policy now has container_file_t: use it in this scenario instead of svirt_image_t" >&2; return 1
  fi
  echo "  $(getenforce), policy $(awk -F= '$1 == "SELINUXTYPE" {print $2}' /etc/selinux/config) (MCS), $(id -Z)"
}

# ---------------------------------------------------------------------------------------------- checks

label_of() { stat -c %C "$1"; }
expect_label() { # path context
  local got; got=$(label_of "$1") || return
  [[ $got == "$2" ]] || { echo "$1 is labelled $got, not $2" >&2; return 1; }
}
# The staging mount's superblock took the context: mountinfo's super options show it, the root carries it.
staged_with() { # volume context
  local staging options
  staging=$(staging_of "$1")
  options=$(findmnt -rn -o FS-OPTIONS --mountpoint "$staging") || { echo "$staging is not mounted" >&2; return 1; }
  [[ ,$options, == *",context=\"$2\","* ]] || { echo "$staging's super options are $options" >&2; return 1; }
  expect_label "$staging" "$2"
}
mounts_at() { findmnt -rn -o TARGET | grep -cxF "$1"; }
record_file() { echo "$STATE/volumes/$(printf '%s' "$1" | sha256sum | cut -d' ' -f1).pb"; }
not_there() { ! findmnt -rn --mountpoint "$1" >/dev/null && [[ ! -e $1 ]]; }

# ------------------------------------------------------------------------------------------- unknown

kubelet_context_refused() {
  local vol; vol=$(vol_of ext4)
  csi_fails INVALID_ARGUMENT stagex "$vol" "$(staging_of "$vol")" ext4 "devicePath=${LOOP[ext4]}" \
    "$(flag_of "$KUBELET_CTX")" || return
  [[ $CSI_REPLY == *"[context=]"*"a type and level its policy defines"* ]] ||
    { echo "the refusal does not name the context option and what it needs" >&2; return 1; }
}
left_nothing() { # volume device
  local content
  ! findmnt -rn --mountpoint "$(staging_of "$1")" >/dev/null || { echo "still mounted" >&2; return 1; }
  [[ ! -e $(record_file "$1") ]] || { echo "a staging record is left" >&2; return 1; }
  # blkid -p: 2 when it finds nothing on the device.
  content=$(blkid -p -o export "$2"); [[ $? == 2 ]] || { echo "$2 holds: $content" >&2; return 1; }
}

# ------------------------------------------------------------------------------------------------ fs

stage_with() { # fs context
  local vol; vol=$(vol_of "$1")
  csi stagex "$vol" "$(staging_of "$vol")" "$1" "devicePath=${LOOP[$1]}" "$(flag_of "$2")" &&
    [[ $(mounts_at "$(staging_of "$vol")") == 1 ]] && staged_with "$vol" "$2" &&
    [[ $(findmnt -rn -o FSTYPE --mountpoint "$(staging_of "$vol")") == "$1" ]]
}

publish_with() { # fs context target-pod
  local vol target; vol=$(vol_of "$1"); target=$(target_of "$vol" "$3")
  csi publishx "$vol" "$(staging_of "$vol")" "$target" "$1" ${2:+"$(flag_of "$2")"} &&
    [[ $(mounts_at "$target") == 1 ]] && expect_label "$target" "$CTX_A"
}

# What a pod makes through its path carries the context: a file with data, a directory, a file in it.
files_labelled() { # fs
  local target; target=$(target_of "$(vol_of "$1")")
  dd if=/dev/urandom of="$target/data" bs=1M count=1 conv=fsync status=none && mkdir "$target/dir" &&
    touch "$target/dir/file" || return
  local path
  for path in "$target/data" "$target/dir" "$target/dir/file"; do expect_label "$path" "$CTX_A" || return; done
  echo "  $1: data, dir, dir/file: $(label_of "$target/dir/file")"
}

# Another context for the staged volume: ALREADY_EXISTS naming both; the mount and the record unchanged.
second_context_refused() { # fs
  local vol staging record before after
  vol=$(vol_of "$1"); staging=$(staging_of "$vol"); record=$(record_file "$vol")
  before=$(sha256sum < "$record")
  csi_fails ALREADY_EXISTS stagex "$vol" "$staging" "$1" "devicePath=${LOOP[$1]}" "$(flag_of "$CTX_B")" || return
  [[ $CSI_REPLY == *"SELinux context $CTX_A"* && $CSI_REPLY == *"asks for SELinux context $CTX_B"* ]] ||
    { echo "the refusal does not name both contexts" >&2; return 1; }
  after=$(sha256sum < "$record")
  [[ $before == "$after" ]] || { echo "the staging record changed" >&2; return 1; }
  [[ $(mounts_at "$staging") == 1 ]] && staged_with "$vol" "$CTX_A"
}

other_publication_refused() { # fs
  local vol target; vol=$(vol_of "$1"); target=$(target_of "$vol" pod-b)
  csi_fails FAILED_PRECONDITION publishx "$vol" "$(staging_of "$vol")" "$target" "$1" "$(flag_of "$CTX_B")" || return
  [[ $CSI_REPLY == *"SELinux context $CTX_A"*"SELinux context $CTX_B"* ]] ||
    { echo "the refusal does not name both contexts" >&2; return 1; }
  not_there "$target"
}

plain_publication() { # fs
  local vol target; vol=$(vol_of "$1"); target=$(target_of "$vol" pod-b)
  publish_with "$1" "" pod-b && expect_label "$target/dir/file" "$CTX_A" &&
    csi unpublish "$vol" "$target" && not_there "$target"
}

fs_part() { # fs
  step "$1-stage-context-a"        stage_with "$1" "$CTX_A"
  step "$1-publish-context-a"      publish_with "$1" "$CTX_A" pod-1
  step "$1-files-carry-context"    files_labelled "$1"
  step "$1-stage-context-b-refused" second_context_refused "$1"
  step "$1-publish-b-refused"      other_publication_refused "$1"
  step "$1-publish-no-context"     plain_publication "$1"
}

restaged_after_restart() { # fs
  stage_with "$1" "$CTX_A" && publish_with "$1" "$CTX_A" pod-1 && second_context_refused "$1"
}

plugin_restart() { bn_plugin_stop && bn_plugin_start && bn_plugin_ready; }

# --------------------------------------------------------------------------------------------- block

block_staged_and_published() {
  local label; label=$(label_of "${LOOP[blk]}") || return
  csi stagex "$BLK" "$(block_staging_of "$BLK")" block "devicePath=${LOOP[blk]}" &&
    csi publishx "$BLK" "$(block_staging_of "$BLK")" "$(block_target_of "$BLK")" block || return
  [[ -b $(block_target_of "$BLK") ]] || { echo "the block target is no block device" >&2; return 1; }
  expect_label "$(block_target_of "$BLK")" "$label" && echo "  the device node keeps its label: $label"
}
block_io() { bn_write_raw "$(block_target_of "$BLK")" && bn_read_raw "$(block_target_of "$BLK")" "${LOOP[blk]}"; }
block_down() {
  csi unpublish "$BLK" "$(block_target_of "$BLK")" && csi unstage "$BLK" "$(block_staging_of "$BLK")" &&
    not_there "$(block_target_of "$BLK")"
}

# ---------------------------------------------------------------------------------------------- down

fs_down() { # fs
  local vol; vol=$(vol_of "$1")
  csi unpublish "$vol" "$(target_of "$vol")" && not_there "$(target_of "$vol")" &&
    csi unstage "$vol" "$(staging_of "$vol")" && ! findmnt -rn --mountpoint "$(staging_of "$vol")" >/dev/null &&
    [[ ! -e $(record_file "$vol") ]]
}

# ext4 again, without a context: the files made under context A are not labelled A any more.
label_was_the_mounts() {
  local vol label; vol=$(vol_of ext4)
  csi stagex "$vol" "$(staging_of "$vol")" ext4 "devicePath=${LOOP[ext4]}" || return
  label=$(label_of "$(staging_of "$vol")/dir/file") || return
  [[ $label != "$CTX_A" ]] || { echo "dir/file is still labelled $CTX_A without the context" >&2; return 1; }
  echo "  without the context, dir/file is $label"
  csi unstage "$vol" "$(staging_of "$vol")" && ! findmnt -rn --mountpoint "$(staging_of "$vol")" >/dev/null
}

selinux_node_clean() {
  local left=0 out
  out=$(findmnt -rn -o TARGET | grep -F "$BN_P/") && { echo "still mounted: $out" >&2; left=1; }
  out=$(ls -A "$STATE/volumes" 2>/dev/null) && [[ -n $out ]] && { echo "staging records left: $out" >&2; left=1; }
  return $left
}

# After a failed step (bn_fail): whatever is mounted under the kubelet root, then the loop devices.
bn_on_fail() {
  echo "----- SELinux denials (dmesg, last 10)"; dmesg | grep -F 'avc:' | tail -n 10
  findmnt -rn -o TARGET | grep -F "$BN_P/" | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
  drop_loops 2>/dev/null
}

# ----------------------------------------------------------------------------------------------- run

BN_STARTED=$(vm_now_ms)
mkdir -p "$VM_RESULTS"
rm -f "$VM_RESULTS/xfail" "$VM_RESULTS/secret-canaries"
vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs"
step plugin-launch            bn_plugin_launch
# Modules and loop devices before the policy: under it their files would be unlabeled_t (logged denials).
step modules                  modprobe -a loop ext4 xfs
step loop-devices             make_loops
step selinux-policy           load_selinux_policy
step plugin-ready             bn_plugin_ready
step kubelet-context-unknown  kubelet_context_refused
step unknown-left-nothing     left_nothing "$(vol_of ext4)" "${LOOP[ext4]}"
fs_part ext4
fs_part xfs
step plugin-restart           plugin_restart
step ext4-after-restart       restaged_after_restart ext4
step xfs-after-restart        restaged_after_restart xfs
step block-stage-publish      block_staged_and_published
step block-io                 block_io
step block-down               block_down
step ext4-down                fs_down ext4
step xfs-down                 fs_down xfs
step ext4-label-was-the-mounts label_was_the_mounts
step plugin-stop              bn_plugin_stop
step node-clean               selinux_node_clean
step loops-detached           drop_loops
echo "  SELinux denials logged (permissive): $(dmesg | grep -cF 'avc:  denied')"
echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
