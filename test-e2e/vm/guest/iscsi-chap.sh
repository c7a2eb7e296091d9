#!/bin/bash
# iscsi-chap: a target that requires CHAP, and where the secret may and may not go.
#
#   - NodeStageVolume without secrets fails (FAILED_PRECONDITION or INTERNAL) naming the failed login;
#   - with a wrong password it fails with FAILED_PRECONDITION naming CHAP;
#   (what a failed attempt leaves, node records, is left in place: kubelet retries on such a node, and
#   the next attempt must not be spoilt by it, e.g. by a stale wrong password in a record)
#   - with the right secrets it succeeds; while it runs (and after) no process's argv holds the
#     password (every /proc/*/cmdline read with bash builtins only, so that the scan itself puts the
#     password in no argv), and it is in no log: not the plugin's, the client's, the record of the
#     plugin's commands; the host checks console, dmesg and every other result file afterwards (the
#     password is listed in results/<scenario>/secret-canaries for that, and the run fails if any
#     other file has it). It IS in each portal's node record file, which must be mode 0600;
#   - publish, write, unpublish, unstage: sessions logged out, the records (with the password) gone.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/iscsi-lib.sh"

TID=14
IQN=iqn.2024-01.dev.blocknode:chap
VOLUME=vol-chap
STAGING=$(staging_of $VOLUME)
TARGET=$(target_of $VOLUME)
CHAP_USER=bn-chap-user
# Random each run, so that a match anywhere is this run's leak. Never printed.
CHAP_PASSWORD=pw$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 18)
WRONG_PASSWORD=wrong$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 15)
CTX=$(bn_iscsi_ctx "$IQN" 1 "$(bn_wwid $TID 1)")
BN_SECRETS=("$CHAP_PASSWORD" "$WRONG_PASSWORD")

chap_target() {
  printf '%s\n%s\n' "$CHAP_PASSWORD" "$WRONG_PASSWORD" > "$VM_RESULTS/secret-canaries"
  vm_target_create $TID "$IQN" 64 || return
  # tgtadm takes the password in its argv: done here, before any scan of argv starts.
  tgtadm --lld iscsi --mode account --op new --user "$CHAP_USER" --password "$CHAP_PASSWORD" &&
    tgtadm --lld iscsi --mode account --op bind --tid $TID --user "$CHAP_USER"
}
chap_target_delete() {
  tgtadm --lld iscsi --mode account --op unbind --tid $TID --user "$CHAP_USER" &&
    tgtadm --lld iscsi --mode account --op delete --user "$CHAP_USER" && bn_target_delete $TID
}

no_secrets() {
  csi_fails "FAILED_PRECONDITION|INTERNAL" stagex $VOLUME "$STAGING" ext4 $CTX || return
  [[ ${CSI_REPLY,,} == *login* || ${CSI_REPLY,,} == *chap* || ${CSI_REPLY,,} == *authenticat* ]] ||
    { echo "the error does not name the failed login" >&2; return 1; }
}
wrong_password() {
  csi_fails FAILED_PRECONDITION stagex $VOLUME "$STAGING" ext4 $CTX \
    "secret:node.session.auth.username=$CHAP_USER" "secret:node.session.auth.password=$WRONG_PASSWORD" || return
  [[ $CSI_REPLY == *CHAP* ]] || { echo "the error does not mention CHAP" >&2; return 1; }
}
right_secrets() {
  bn_argv_scan_start
  csi stagex $VOLUME "$STAGING" ext4 $CTX \
    "secret:node.session.auth.username=$CHAP_USER" "secret:node.session.auth.password=$CHAP_PASSWORD"
  local rc=$?
  # The staged volume's processes (iscsid's children, the plugin) are scanned a little longer.
  sleep 1
  bn_argv_scan_stop || rc=1
  return $rc
}

# After a failed login no session exists; what is left of the attempt is reported.
after_failure() {
  bn_expect_sessions "$IQN" 0 || return
  echo "  left after the failed stage: $(bn_records_of "$IQN") node record(s) of $IQN"
}
no_records_left() { [[ $(bn_records_of "$IQN") == 0 ]] || { echo "node records left: $(ls "/etc/iscsi/nodes/$IQN")" >&2; return 1; }; }

records_hold_secret() {
  local f n=0 mode
  for f in "/etc/iscsi/nodes/$IQN"/*; do
    [[ -e $f ]] || continue
    [[ -d $f ]] && f=$(find "$f" -type f | head -n 1)
    n=$((n + 1))
    mode=$(stat -c %a "$f")
    [[ $mode == 600 ]] || { echo "$f has mode $mode, not 600" >&2; return 1; }
    local line found=no
    while IFS= read -r line; do
      [[ $line == "node.session.auth.password = $CHAP_PASSWORD" ]] && found=yes
    done < "$f"
    [[ $found == yes ]] || { echo "$f does not hold the CHAP password" >&2; return 1; }
    [[ $(sed -n 's/^node.session.auth.authmethod = //p' "$f") == CHAP ]] || { echo "$f: authmethod is not CHAP" >&2; return 1; }
  done
  ((n == 2)) || { echo "$n node records, expected 2" >&2; return 1; }
  echo "  both records hold the password, mode 600, authmethod CHAP"
}

# The password in no log the guest can read (the host checks the rest; see secret-canaries).
not_in_logs() {
  bn_secrets_in_no_file "$VM_RESULTS/plugin.log" "$VM_RESULTS/client.log" "$BN_COMMAND_LOG" /etc/iscsi/iscsid.conf
}

bn_on_fail() {
  bn_argv_scan_abort
  tgtadm --lld iscsi --mode account --op unbind --tid $TID --user "$CHAP_USER" >/dev/null 2>&1
  tgtadm --lld iscsi --mode account --op delete --user "$CHAP_USER" >/dev/null 2>&1
  true
}
trap bn_on_fail EXIT

SUM=""
bn_begin
step chap-target           chap_target
step plugin-ready          bn_plugin_ready
step stage-without-secrets no_secrets
step after-no-secrets      after_failure
step no-records-after-no-secrets no_records_left
step stage-wrong-password  wrong_password
step after-wrong-password  after_failure
step no-records-after-wrong-password no_records_left
step stage-right-secrets   right_secrets
step sessions-up           bn_expect_sessions "$IQN" 2
step records-hold-secret   records_hold_secret
step publish               csi publishx $VOLUME "$STAGING" "$TARGET" ext4
step write-fsync           eval 'SUM=$(bn_write_file "$TARGET/data" 4) && [[ -n $SUM ]]'
step verify                bn_verify_file "$TARGET/data" "$SUM"
step unpublish             csi unpublish $VOLUME "$TARGET"
step unstage               csi unstage $VOLUME "$STAGING"
step logged-out-no-records eval 'bn_target_released "$IQN" && vm_leftovers'
step secret-in-no-log      not_in_logs
step chap-target-delete    chap_target_delete
bn_end
