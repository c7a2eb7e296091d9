#!/bin/bash
# iscsi-luks: LUKS2 on the node (volume_context encryption: luks2) over iSCSI with two paths, on the guest's
# dm-crypt (the host tier's kernel may have no device-mapper).
#
#   - LUN 1 staged plain first (ext4 made on the blank LUN): its stage time is the baseline; unstaged, the LUN
#     holds ext4, and a stage asking for luks2 is refused (FAILED_PRECONDITION): nothing is encrypted over data;
#   - the LUN's head wiped from the array's side (as a new LUN is blank), then staged with luks2: formatted LUKS2,
#     opened, ext4 made on the opening; the two stage times are printed and kept in luks-stage-times;
#   - publish, write, unpublish, unstage: the mapping closed, sessions out, nothing left;
#   - restaged with a wrong passphrase: FAILED_PRECONDITION naming the secret, no mapping, no session left;
#   - restaged with the right one: the data is there; the LUN grown on the array and NodeExpandVolume called with
#     the passphrase in its secrets: the multipath map, the crypt mapping and ext4 grow, in that order; the answer is
#     the mapping's size (the LUN less the LUKS2 header's area); the data is still there; unstaged, nothing left;
#   - its staging record wiped (the plugin stopped, the file deleted, started again), unstaged: the plugin rebuilds
#     the record from the host through the crypt mapping (named and LUKS2 by its dm name and uuid) to the multipath
#     map and the sessions, closes the mapping after the unmount and logs out: no mapping, map, session, mount or
#     record is left;
#   - LUN 2 as raw block with luks2: the published device is the crypt mapping; a marker written through it is
#     read back through it and is nowhere in the LUN's backing file (the array holds ciphertext);
#   - the passphrases are in no process's argv (every /proc/*/cmdline, bash builtins only), in no log, the
#     command record (cryptsetup's argv is recorded) or the state dir (read while staged); the host checks every other result file
#     (results/<scenario>/secret-canaries).
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"
BN_SHIMMED+=(cryptsetup) # its argv in the command record, to show the passphrase is not there

TID=18
IQN=iqn.2024-01.dev.blocknode:luks
VOLUME=vol-luks
STAGING=$(staging_of $VOLUME)
TARGET=$(target_of $VOLUME)
BLOCK=vol-luks-blk
BLOCK_STAGING=$(block_staging_of $BLOCK)
BLOCK_TARGET=$(block_target_of $BLOCK)
# Random each run, so that a match anywhere is this run's leak. Never printed.
KEY=lk$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 30)
WRONG=wk$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 30)
CTX1=$(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 1)")
CTX2=$(bn_iscsi_ctx "$IQN" 2 "$(bn_wwid $TID 2)")
BN_SECRETS=("$KEY" "$WRONG")
MARKER=BLOCKNODE-LUKS-PLAINTEXT-MARKER
SUM=""
PLAIN_MS=""
LUKS_MS=""

luks_target() {
  printf '%s\n%s\n' "$KEY" "$WRONG" > "$VM_RESULTS/secret-canaries"
  modprobe -a dm_crypt || return
  vm_target_create $TID "$IQN" 64 64
}

crypt_mappings() { dmsetup ls --target crypt 2>/dev/null | grep -v '^No devices found' || true; }
no_mapping() { [[ -z $(crypt_mappings) ]] || { echo "crypt mappings left: $(crypt_mappings)" >&2; return 1; }; }

stage_plain() {
  csi stagex $VOLUME "$STAGING" ext4 $CTX1 || return
  PLAIN_MS=$CSI_MS
}
luks_refuses_a_filesystem() {
  csi_fails FAILED_PRECONDITION stagex $VOLUME "$STAGING" ext4 $CTX1 encryption=luks2 \
    "secret:encryptionPassphrase=$KEY" || return
  [[ $CSI_REPLY == *ext4* ]] || { echo "the refusal does not name what the device holds" >&2; return 1; }
}
# What a new LUN is: zeros where blkid and the probe look (the first MiB) and where ext4 keeps a backup.
wipe_lun() { dd if=/dev/zero of="$(bn_lun_file $TID 1)" bs=1M count=64 conv=notrunc,fsync status=none; }

stage_luks() { # [secret]
  bn_argv_scan_start
  csi stagex $VOLUME "$STAGING" ext4 $CTX1 encryption=luks2 "secret:encryptionPassphrase=${1:-$KEY}"
  local rc=$?
  bn_argv_scan_stop || rc=1
  return $rc
}
first_luks_stage() {
  stage_luks || return
  LUKS_MS=$CSI_MS
  echo "  first stage of the blank LUN: plain ext4 $PLAIN_MS ms, LUKS2 + ext4 $LUKS_MS ms" |
    tee "$VM_RESULTS/luks-stage-times"
}
staged_on_crypt() {
  local source
  source=$(findmnt -n -o SOURCE --mountpoint "$STAGING") || { echo "nothing mounted at $STAGING" >&2; return 1; }
  [[ $(dmsetup table -j "$(stat -L -c %Hr "$source")" -m "$(stat -L -c %Lr "$source")" 2>/dev/null |
        awk '{print $3}') == crypt ]] ||
    { echo "$STAGING holds $source, not a crypt mapping" >&2; return 1; }
  [[ $(blkid -p -o value -s TYPE "/dev/mapper/$(bn_wwid $TID 1)") == crypto_LUKS ]] ||
    { echo "the LUN's map does not hold a LUKS header" >&2; return 1; }
  echo "  $STAGING: $source (crypt) over /dev/mapper/$(bn_wwid $TID 1) (crypto_LUKS)"
}
wrong_key() {
  csi_fails FAILED_PRECONDITION stagex $VOLUME "$STAGING" ext4 $CTX1 encryption=luks2 \
    "secret:encryptionPassphrase=$WRONG" || return
  [[ $CSI_REPLY == *encryptionPassphrase* ]] || { echo "the refusal does not name the secret's key" >&2; return 1; }
}

# NodeExpandVolume after the LUN grew by 64 MB (the passphrase in the secrets, the argv scanned as at stage).
expand_luks() {
  local before after mapping lun map crypt offset rc
  before=$(stat -f -c '%b %S' "$TARGET" | awk '{print $1 * $2}')
  bn_argv_scan_start
  csi expand $VOLUME "$TARGET" "$STAGING" "secret:encryptionPassphrase=$KEY"
  rc=$?
  bn_argv_scan_stop || rc=1
  ((rc == 0)) || return $rc
  mapping=$(findmnt -n -o SOURCE --mountpoint "$STAGING") || { echo "nothing mounted at $STAGING" >&2; return 1; }
  lun=$(stat -c %s "$(bn_lun_file $TID 1)")
  map=$(blockdev --getsize64 "/dev/mapper/$(bn_wwid $TID 1)") || return
  crypt=$(blockdev --getsize64 "$mapping") || return
  # The crypt target's table: start length crypt cipher key iv_offset device offset (the header's sectors).
  offset=$(dmsetup table -j "$(stat -L -c %Hr "$mapping")" -m "$(stat -L -c %Lr "$mapping")" |
    awk '$3 == "crypt" {print $8 * 512}')
  after=$(stat -f -c '%b %S' "$TARGET" | awk '{print $1 * $2}')
  echo "  LUN $lun, multipath map $map, crypt mapping $crypt (+ header $offset), ext4 $before -> $after bytes"
  ((map == lun)) || { echo "the multipath map did not grow with the LUN" >&2; return 1; }
  ((crypt + offset == lun)) || { echo "the crypt mapping does not fill its grown device" >&2; return 1; }
  [[ $CSI_REPLY == *" capacity=$crypt" ]] || { echo "expand replied [$CSI_REPLY], the mapping is $crypt" >&2; return 1; }
  ((after >= before + 64 * 1024 * 1024 * 9 / 10)) || { echo "the filesystem did not grow enough" >&2; return 1; }
}

record_of() { echo "$STATE/volumes/$(printf '%s' "$1" | sha256sum | cut -d' ' -f1).pb"; }
mapping_of() { echo "blocknode-$(printf '%s' "$1" | sha256sum | cut -c1-32)"; }

# The record is lost the way a wiped state dir loses it, across a restart (the plugin keeps its records in memory).
lose_record() {
  local mapping
  mapping=$(mapping_of $VOLUME)
  [[ -e /dev/mapper/$mapping ]] || { echo "no mapping $mapping to trace" >&2; return 1; }
  echo "  $STAGING: $(findmnt -n -o SOURCE --mountpoint "$STAGING"), dm uuid $(dmsetup info -c --noheadings -o uuid "$mapping")"
  [[ -f $(record_of $VOLUME) ]] || { echo "no record file $(record_of $VOLUME)" >&2; return 1; }
  bn_plugin_stop || return
  rm -f "$(record_of $VOLUME)"
  bn_plugin_start && bn_plugin_ready
}
rebuilt_and_closed() {
  grep -qF "rebuilt its record from the host to tear it down: dm-crypt mapping $(mapping_of $VOLUME) over transport iscsi" \
    "$VM_RESULTS/plugin.log" || { echo "the plugin did not rebuild the record through the crypt mapping" >&2; return 1; }
  ! findmnt -rn --mountpoint "$STAGING" >/dev/null || { echo "$STAGING is still mounted" >&2; return 1; }
  [[ ! -e $(record_of $VOLUME) ]] || { echo "the rebuilt record was left" >&2; return 1; }
  no_mapping && bn_target_released "$IQN" && vm_leftovers
}

stage_block() {
  bn_argv_scan_start
  csi stagex $BLOCK "$BLOCK_STAGING" block $CTX2 encryption=luks2 "secret:encryptionPassphrase=$KEY"
  local rc=$?
  bn_argv_scan_stop || rc=1
  return $rc
}
block_is_ciphertext_below() {
  local dm written back
  [[ -b $BLOCK_TARGET ]] || { echo "$BLOCK_TARGET is not a block device" >&2; return 1; }
  dm=$(basename "$(readlink -f "/dev/block/$(stat -c '%Hr:%Lr' "$BLOCK_TARGET")")")
  [[ $(dmsetup table -j "$(stat -c %Hr "$BLOCK_TARGET")" -m "$(stat -c %Lr "$BLOCK_TARGET")" | awk '{print $3}') == crypt ]] ||
    { echo "$BLOCK_TARGET is $dm, not a crypt mapping" >&2; return 1; }
  yes "$MARKER" | head -c 1048576 > /tmp/bn-luks-marker
  written=$(sha256sum < /tmp/bn-luks-marker)
  dd if=/tmp/bn-luks-marker of="$BLOCK_TARGET" bs=1M oflag=direct conv=fsync status=none || return
  rm -f /tmp/bn-luks-marker
  back=$(dd if="$BLOCK_TARGET" bs=1M count=1 iflag=direct status=none | sha256sum)
  [[ $written == "$back" ]] || { echo "what was written through $BLOCK_TARGET does not read back" >&2; return 1; }
  if grep -qF "$MARKER" "$(bn_lun_file $TID 2)"; then
    echo "the plaintext marker is in the LUN's backing file" >&2; return 1
  fi
  echo "  $BLOCK_TARGET: $dm (crypt); 1 MiB of a marker read back through it, absent from the LUN"
}

# The passphrases in no file of the state dir while the volume is staged (its record is there then).
not_in_state() {
  local files
  mapfile -d '' -t files < <(find "$STATE" -type f -print0)
  ((${#files[@]} > 0)) || { echo "no file in $STATE: nothing was checked" >&2; return 1; }
  bn_secrets_in_no_file "${files[@]}" || return
  echo "  ${#files[@]} state file(s), no passphrase"
}

# The passphrases in no log the guest can read (the host checks the rest).
not_in_logs() {
  bn_save_commands
  grep -q ' cryptsetup ' "$VM_RESULTS/commands.log" || { echo "no cryptsetup in the command record" >&2; return 1; }
  bn_secrets_in_no_file "$VM_RESULTS/plugin.log" "$VM_RESULTS/client.log" "$VM_RESULTS/commands.log" "$BN_COMMAND_LOG"
}

bn_on_fail() {
  bn_argv_scan_abort
  local m
  for m in /dev/mapper/blocknode-*; do
    [[ -e $m ]] || continue
    umount -l "$STAGING" 2>/dev/null
    cryptsetup close "$(basename "$m")" 2>/dev/null
  done
  true
}
trap bn_on_fail EXIT

bn_begin
step luks-target          luks_target
step plugin-ready         bn_plugin_ready
step stage-plain          stage_plain
step unstage-plain        csi unstage $VOLUME "$STAGING"
step released-plain       eval 'bn_target_released "$IQN" && vm_leftovers'
step luks-refuses-ext4    luks_refuses_a_filesystem
step refused-left-nothing eval 'no_mapping && bn_target_released "$IQN" && vm_leftovers'
step wipe-lun             wipe_lun
step stage-luks           first_luks_stage
step staged-on-crypt      staged_on_crypt
step secret-not-in-state  not_in_state
step publish              csi publishx $VOLUME "$STAGING" "$TARGET" ext4
step write-fsync          eval 'SUM=$(bn_write_file "$TARGET/data" 4) && [[ -n $SUM ]]'
step unpublish            csi unpublish $VOLUME "$TARGET"
step unstage              csi unstage $VOLUME "$STAGING"
step closed-released      eval 'no_mapping && bn_target_released "$IQN" && vm_leftovers'
step wrong-key            wrong_key
step wrong-key-left-none  eval 'no_mapping && bn_target_released "$IQN" && vm_leftovers'
step restage-right-key    stage_luks
step republish            csi publishx $VOLUME "$STAGING" "$TARGET" ext4
step data-intact          bn_verify_file "$TARGET/data" "$SUM"
step grow-lun             grow_lun 1 64 "$TARGET"
step expand-luks          expand_luks
step data-intact-grown    bn_verify_file "$TARGET/data" "$SUM"
step unpublish-again      csi unpublish $VOLUME "$TARGET"
step lose-record          lose_record
step unstage-no-record    csi unstage $VOLUME "$STAGING"
step rebuilt-and-closed   rebuilt_and_closed
step unstage-retry        csi unstage $VOLUME "$STAGING"
step stage-block          stage_block
step publish-block        csi publishx $BLOCK "$BLOCK_STAGING" "$BLOCK_TARGET" block
step block-ciphertext     block_is_ciphertext_below
step unpublish-block      csi unpublish $BLOCK "$BLOCK_TARGET"
step unstage-block        csi unstage $BLOCK "$BLOCK_STAGING"
step released-block       eval 'no_mapping && bn_target_released "$IQN" && vm_leftovers'
step secret-in-no-log     not_in_logs
step target-delete        bn_target_delete $TID
bn_end
