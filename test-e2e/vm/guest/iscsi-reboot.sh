#!/bin/bash
# iscsi-reboot: the node loses power with volumes staged and published, boots again, and kubelet stages and
# publishes every volume again with the same arguments, as it does after a reboot.
#
# Two boots of one guest (run-guest.sh's one reboot: /results/reboot-requested, then /results/rebooted).
# What a node keeps across a power cut must be on a disk, and the guest's overlay is a tmpfs: so the LUN
# backing files (the array's disks), the kubelet root, the plugin's state dir and the iSCSI node records
# (all of /etc/iscsi, as on a node's root disk: the plugin writes a record's settings to a file in /etc/iscsi and
# renames it into nodes/, which fails with EXDEV when nodes/ alone is another mount) live on the host through
# the results share (9p), under /results/persist, itself a shared mount as a kubelet root is. The plugin's
# socket stays in /run: a unix socket's inode on 9p is not the one connect() finds.
#
# First boot: a raw-block volume (LUN 2) is staged first, then an ext4 one (LUN 1), so that the block volume's
# record names the first multipath map's device number; both published; a file written to the ext4 volume and
# a pattern to the block one, synced, their sums kept in /results/persist; then the power cut (sysrq b: no
# unmount, no unstage, no logout).
# Second boot: tgtd over the same LUN files, iscsid (the old node records still there), multipathd, the
# plugin on the same state dir and kubelet root. Its start-up must call both staging records stale (their
# devices are gone) and drop the old boot's publications. Then kubelet's re-stage, in the other order (ext4
# first: its map now gets the device number the block volume's record names), and the publishes. Checks:
# both volumes back (the file and the pattern intact, each through a 2-path map of its own WWID), the mounts
# under the kubelet root the same as before the cut and nothing else, `blocknode status` healthy and agreeing
# with the kernel (sessions, maps, mounts), no publication of the old boot left. Then unpublish, unstage, and
# the node is clean.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=31
IQN=iqn.2024-01.dev.blocknode:reboot
PERSIST=$VM_RESULTS/persist
BN_P=$PERSIST/bn
KUBELET=$BN_P/kubelet
STATE=$BN_P/state
SOCKET=/run/bn-reboot/csi.sock
SUMS=$PERSIST/sums

STF=$(staging_of vol-fs); TGF=$(target_of vol-fs)
STB=$(block_staging_of vol-blk); TGB=$(block_target_of vol-blk)
WWID_FS=$(bn_wwid $TID 1)
WWID_BLK=$(bn_wwid $TID 2)

# The node's disks: the array's LUN files and /etc/iscsi (the host's, copied on the first boot) on the host,
# bound where the guest's tools look for them (a mount point at VM_LUN_DIR keeps vm_tgtd_start from putting a
# tmpfs there).
persist_mounts() {
  mkdir -p "$PERSIST/luns" "$VM_LUN_DIR" /run/bn-reboot || return
  mountpoint -q "$PERSIST" || { mount --bind "$PERSIST" "$PERSIST" && mount --make-shared "$PERSIST"; } || return
  [[ -d $PERSIST/etc-iscsi ]] || cp -a /etc/iscsi "$PERSIST/etc-iscsi" || return
  mountpoint -q "$VM_LUN_DIR" || mount --bind "$PERSIST/luns" "$VM_LUN_DIR" || return
  mountpoint -q /etc/iscsi || mount --bind "$PERSIST/etc-iscsi" /etc/iscsi
}
persist_unmount() { umount "$VM_LUN_DIR"; umount /etc/iscsi; umount "$PERSIST"; }

# The device a published block volume's file is bound to: prints dm-N.
dm_of_block() {
  local dev
  [[ -b $1 ]] || { echo "$1 is not a block device" >&2; return 1; }
  dev=$(readlink -f "/dev/block/$(stat -c '%Hr:%Lr' "$1")")
  [[ $dev == /dev/dm-* ]] || { echo "$1 is $dev, not a dm device" >&2; return 1; }
  echo "${dev#/dev/}"
}

# The mounts under the kubelet root (mount point and major:minor of the source), sorted.
kubelet_mounts() { findmnt -rn -o TARGET,MAJ:MIN | awk -v k="$KUBELET/" 'index($1, k) == 1' | sort; }

# The pattern on the block volume: 4 MiB at offset 0, its sum kept.
pattern_sum() { dd if="$1" bs=1M count=4 iflag=direct status=none | sha256sum | cut -d' ' -f1; }

# ------------------------------------------------------------------------------------------- boot 1

write_data() {
  local dm sum
  dm=$(dm_of_block "$TGB") && bn_expect_map "$dm" "$WWID_BLK" 2 || return
  dm=$(bn_dm_of_mount "$STF") && bn_expect_map "$dm" "$WWID_FS" 2 || return
  sum=$(bn_write_file "$TGF/data" 4) || return
  echo "fs $sum" > "$SUMS"
  dd if=/dev/urandom of="$TGB" bs=1M count=4 oflag=direct conv=fsync,notrunc status=none || return
  echo "blk $(pattern_sum "$TGB")" >> "$SUMS"
  kubelet_mounts | awk '{print $1}' > "$PERSIST/mounts-before"
  echo "  $(wc -l < "$PERSIST/mounts-before") mounts under the kubelet root; sums: $(tr '\n' ' ' < "$SUMS")"
  sync
}

power_cut() {
  bn_save_commands
  dmesg > "$VM_RESULTS/dmesg-boot1.txt" 2>&1
  echo "$BN_SCENARIO: first boot done, $BN_STEPS_OK steps in $(( $(vm_now_ms) - BN_STARTED )) ms; power cut"
  echo "boot 1 $(cat /proc/sys/kernel/random/boot_id)" > "$VM_RESULTS/reboot-requested"
  # Nothing unmounted, unstaged or logged out; the results share is 9p without a cache, so what was written
  # to it is already on the host.
  echo b > /proc/sysrq-trigger
  sleep 60
  echo "the guest did not reset" >&2
  exit 1
}

first_boot() {
  rm -rf "$PERSIST"
  step persist-mounts         persist_mounts
  bn_begin
  step target-create          vm_target_create $TID "$IQN" 64 16
  step plugin-ready           bn_plugin_ready
  step stage-block            csi stagex vol-blk "$STB" block $(bn_iscsi_ctx "$IQN" 2 "$WWID_BLK")
  step stage-fs               csi stagex vol-fs "$STF" ext4 $(bn_iscsi_ctx "$IQN" 1 "$WWID_FS")
  step publish-block          csi publishx vol-blk "$STB" "$TGB" block
  step publish-fs             csi publishx vol-fs "$STF" "$TGF" ext4
  step write-data             write_data
  power_cut
}

# ------------------------------------------------------------------------------------------- boot 2

# What survived: the LUN files, the records, the kubelet root's directories; no session, disk, map or mount.
after_the_cut() {
  local path
  [[ -s $SUMS && -s $PERSIST/mounts-before ]] || { echo "the first boot's sums or mounts are not in $PERSIST" >&2; return 1; }
  for path in /sys/block/sd* /sys/block/dm-* /sys/class/iscsi_session/session*; do
    [[ ! -e $path ]] || { echo "already there: $path" >&2; return 1; }
  done
  [[ -z $(kubelet_mounts) ]] || { echo "mounts under the kubelet root before anything was staged" >&2; return 1; }
  [[ $(bn_records_of "$IQN") == 2 ]] || { echo "the old node records of $IQN are not there" >&2; return 1; }
  [[ $(ls "$STATE/volumes" | wc -l) == 2 ]] || { echo "staging records: $(ls "$STATE/volumes")" >&2; return 1; }
  echo "  node records and 2 staging records survived; publications: $(ls "$STATE/publications" | tr '\n' ' ')"
}

# The plugin's start on the old records: both stale, the old boot's publications dropped, nothing else.
plugin_start_again() {
  echo "----- second boot ($(cat /proc/sys/kernel/random/boot_id))" >> "$VM_RESULTS/plugin.log"
  BOOT2_LOG_FROM=$(wc -l < "$VM_RESULTS/plugin.log")
  bn_plugin_start
}
boot2_log() { tail -n +"$((BOOT2_LOG_FROM + 1))" "$VM_RESULTS/plugin.log"; }

startup_saw_the_reboot() {
  local line boot_id publications
  line=$(boot2_log | grep -o 'startup check: .*' | head -n 1)
  echo "  $line"
  [[ $line == *"2 staged volume record(s): 0 in place, 0 half-done, 2 stale"* ]] || { echo "expected both records stale" >&2; return 1; }
  boot2_log | grep -q 'dropped .* publication record(s) of an earlier boot' ||
    { echo "the old boot's publications were not dropped" >&2; return 1; }
  boot_id=$(cat /proc/sys/kernel/random/boot_id)
  publications=$(ls "$STATE/publications")
  [[ $publications == "$boot_id" ]] || { echo "publication journals: $publications (this boot: $boot_id)" >&2; return 1; }
  # Recovery touched nothing: no teardown of a volume kubelet still wants (the commands are recorded from the
  # shims' start, which the plugin's start-up can precede: its log says what it recovered).
  ! bn_plugin_commands | grep -q -- '--logout\|multipath -f' || { echo "the plugin tore something down at start" >&2; return 1; }
  ! boot2_log | grep -q 'StartupRecovery' || { echo "start-up recovery acted:" >&2; boot2_log | grep StartupRecovery >&2; return 1; }
}

# blocknode status: exit CODE expected; prints the JSON (to status-N.json).
STATUS_N=0
status_says() {
  local code=0 out
  STATUS_N=$((STATUS_N + 1))
  out=$("$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$PLUGIN_JAR:$CLIENT_JAR" dev.blocknode.Main status --state-dir "$STATE" \
        --kubelet-root "$KUBELET" -o json) || code=$?
  printf '%s\n' "$out" > "$VM_RESULTS/status-$STATUS_N.json"
  echo "  blocknode status: exit $code ($VM_RESULTS/status-$STATUS_N.json)"
  [[ $code == "$1" ]] || { printf '%s\n' "$out" | head -c 3000 >&2; echo >&2; echo "expected exit $1" >&2; return 1; }
  STATUS_JSON=$out
}

back_intact() {
  local dm_fs dm_blk want
  dm_fs=$(bn_dm_of_mount "$STF") && bn_expect_map "$dm_fs" "$WWID_FS" 2 || return
  dm_blk=$(dm_of_block "$TGB") && bn_expect_map "$dm_blk" "$WWID_BLK" 2 || return
  [[ $dm_fs != "$dm_blk" ]] || { echo "both volumes on $dm_fs" >&2; return 1; }
  [[ $(bn_dm_of_mount "$TGF") == "$dm_fs" ]] || { echo "$TGF is not on $dm_fs" >&2; return 1; }
  bn_verify_file "$TGF/data" "$(awk '$1 == "fs" {print $2}' "$SUMS")" || return
  want=$(awk '$1 == "blk" {print $2}' "$SUMS")
  [[ $(pattern_sum "$TGB") == "$want" ]] || { echo "the block volume's pattern changed" >&2; return 1; }
  echo "  vol-fs on $dm_fs, vol-blk on $dm_blk; the file and the pattern read back"
}

# The kernel and the records agree: 2 sessions, 2 maps, the same mounts as before the cut and no other,
# each record naming the device its volume is really on, and status healthy with both volumes.
records_agree() {
  local now
  bn_expect_sessions "$IQN" 2 && bn_expect_records "$IQN" || return
  [[ $(ls /sys/block | grep -c '^dm-') == 2 ]] || { echo "dm devices: $(ls /sys/block | grep '^dm-')" >&2; return 1; }
  now=$(kubelet_mounts | awk '{print $1}')
  [[ $now == "$(cat "$PERSIST/mounts-before")" ]] ||
    { echo "mounts under the kubelet root differ from before the cut:" >&2; diff <(echo "$now") "$PERSIST/mounts-before" >&2; return 1; }
  status_says 0 || return
  local v
  for v in vol-fs vol-blk; do
    grep -q "\"$v\"" <<<"$STATUS_JSON" || { echo "status does not list $v" >&2; return 1; }
  done
  [[ $(ls "$STATE/publications") == "$(cat /proc/sys/kernel/random/boot_id)" ]] ||
    { echo "publication journals: $(ls "$STATE/publications")" >&2; return 1; }
}

second_boot() {
  BN_STARTED=$(vm_now_ms)
  vm_log "$BN_SCENARIO: second boot, kernel $(uname -r), $(nproc) vCPUs"
  : > "$VM_RESULTS/client.log"
  step persist-mounts         persist_mounts
  step after-the-cut          after_the_cut
  # The plugin's JVM starts while the SAN comes up, as in bn_begin (its start-up reads records and sysfs only).
  step plugin-start-again     plugin_start_again
  BN_OWN_SAN=yes
  step san-start              vm_san_start
  step install-shims          bn_install_shims
  step target-same-luns       vm_target_create $TID "$IQN" 64 16
  step plugin-ready           bn_plugin_ready
  step startup-saw-the-reboot startup_saw_the_reboot
  step status-before          status_says 1
  step restage-fs             csi stagex vol-fs "$STF" ext4 $(bn_iscsi_ctx "$IQN" 1 "$WWID_FS")
  step restage-block          csi stagex vol-blk "$STB" block $(bn_iscsi_ctx "$IQN" 2 "$WWID_BLK")
  step republish-fs           csi publishx vol-fs "$STF" "$TGF" ext4
  step republish-block        csi publishx vol-blk "$STB" "$TGB" block
  step back-intact            back_intact
  step records-agree          records_agree
  step unpublish-fs           csi unpublish vol-fs "$TGF"
  step unpublish-block        csi unpublish vol-blk "$TGB"
  step unstage-fs             csi unstage vol-fs "$STF"
  step unstage-block          csi unstage vol-blk "$STB"
  step logged-out             eval 'bn_target_released "$IQN" && vm_leftovers'
  step target-delete          bn_target_delete $TID
  bn_end
  step persist-unmount        persist_unmount
  rm -rf "$PERSIST"
}

bn_on_fail() { true; }
if [[ -e $VM_RESULTS/rebooted ]]; then
  second_boot
else
  first_boot
fi
