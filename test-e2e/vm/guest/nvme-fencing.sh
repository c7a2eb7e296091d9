#!/bin/bash
# nvme-fencing: two nodes on one NVMe/TCP namespace, fenced at the storage with NVMe reservations (nvmet's
# resv_enable, Linux 6.13 on: the newest kernel of trixie-backports, as nvme-reservations; one boot for both).
# vm-kernel: trixie-backports
# vm-append: nvme_core.multipath=N
# vm-san: own     (udevd and nvmet only; no iSCSI daemon)
# vm-limit: 700   (a suite's limit for it: 618 s alone at host load 12-16, the kube tier and builds beside it)
#
# The model is fencing.sh (SCSI-3 over iSCSI): node A and node B are two plugin instances in this guest
# (two-nodes-lib.sh: own --node-id, state dir, kubelet root, socket, metrics port). Each connects with a host NQN
# and an explicit host ID of its own (volume_context hostNQN, hostID), so the target sees two hosts, each one
# registrant. nvme_core.multipath=N: with native multipath on, the kernel would put both hosts' controllers of the
# one subsystem under one head, which two real nodes never share; off, each controller has a disk of its own, so
# each volume names one portal. The state at the target is read with nvme-cli's Reservation Report (extended data:
# each registrant's host ID and key, and which one holds) through an observer: a third host connected for the
# read alone and disconnected after it (no registration).
#
#   A stages (ext4, fencing=required) and writes; B's stage is FAILED_PRECONDITION naming A's key and leaves
#   nothing (no controller of B, no registration of B); A unstages (nothing registered); B stages, reads A's data
#   and unstages.
#   A and B stage one raw block volume at the same moment: exactly one stages and holds, the other is
#   FAILED_PRECONDITION and leaves nothing; the winner unstages.
#   A stages a raw block volume with a writer (sequence-numbered O_DIRECT writes); A alive and renewing: B stays
#   refused past the takeover time. A's plugin is killed -9 (renewals stop, the publication and the writer stay);
#   B's retries are refused until A's key has stood still for the takeover time, then B preempts (Preempt and
#   Abort); A's writes fail at the target (EBADE, reservation conflict), and the namespace's backing file is
#   unchanged while A keeps trying; every sequence number in it is one A saw succeed. A's plugin, restarted,
#   reports the volume Fenced and unstages it without touching B's reservation; B unstages.
#   The target restarts (the namespace disabled and enabled: nvmet keeps reservations in memory and forgets
#   them): A, staged and renewing, registers and acquires again, and B is still refused.
#   At the end nothing is registered at the target, and no controller, disk, mount or staging record is left.
#
# GUEST_NVME_FENCE=off runs the same with fencing off and skips the checks that need fencing (the two nodes, the
# target and the stages alone).
HERE=$(dirname "$(readlink -f "$0")")
BN_SCENARIO=${BN_SCENARIO:-nvme-fencing}
source "$HERE/nvme-lib.sh"
source "$HERE/two-nodes-lib.sh"

FENCE=${GUEST_NVME_FENCE:-required}
RENEW=2s
TAKEOVER=8            # s: --fencing-takeover-after, at least 3 renewals
NVME_RESV_ENABLE=1
NSID=1
NS_FILE=$NVME_LUNS/ns$NSID.img
VOL=nv-fence-fs
BLOCK_VOL=nv-fence-blk
declare -A HOSTID=([a]=6b9c0f3e-5d0a-4b8e-9c1d-f0000000000a [b]=6b9c0f3e-5d0a-4b8e-9c1d-f0000000000b
                   [o]=6b9c0f3e-5d0a-4b8e-9c1d-f0000000000f)  # o: the observer, which reads the reservation, holds none
declare -A HOSTNQN
for n in a b o; do HOSTNQN[$n]=nqn.2014-08.org.nvmexpress:uuid:${HOSTID[$n]}; done
NODE_DIR[a]=/tmp/bn-nvme-fencing-a
NODE_DIR[b]=/tmp/bn-nvme-fencing-b
METRICS[a]=127.0.0.1:9813
METRICS[b]=127.0.0.1:9814
NODE_PLUGIN_ARGS=(--fencing-renew-interval "$RENEW" --fencing-takeover-after "${TAKEOVER}s")
fenced() { [[ $FENCE == required ]]; }
# fstep NAME CMD...: a step that needs fencing (skipped with GUEST_NVME_FENCE=off).
fstep() { if fenced; then step "$@"; else echo "step $1 skipped (fencing off)"; fi; }

# Node N's volume context: one portal (no native multipath here), its own host NQN and host ID.
node_ctx() {
  echo "subsysNQN=$NVME_NQN nvmePortals=127.0.0.1:$NVME_PORT namespaceUUID=$(nvme_uuid $NSID) namespaceID=$NSID" \
       "hostNQN=${HOSTNQN[$1]} hostID=${HOSTID[$1]} fencing=$FENCE"
}

# ------------------------------------------------------------------------------- the hosts' controllers

# The controllers host N (a, b, o) has of the subsystem, one name a line.
node_controllers() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [[ -e $c && $(cat "$c/subsysnqn" 2>/dev/null) == "$NVME_NQN" && $(cat "$c/hostnqn" 2>/dev/null) == "${HOSTNQN[$1]}" ]] &&
      echo "${c##*/}"
  done
}
# node_has_nothing N: no controller of host N (so no disk of it either).
node_has_nothing() {
  local left; left=$(node_controllers "$1" | xargs)
  [[ -z $left ]] || { echo "node-$1 still has controller(s) $left" >&2; return 1; }
}
# node_connected N: exactly one live controller of host N, connected with N's host ID, and its disk of the
# namespace; NODE_DISK is that disk (/dev/nvmeXnY).
node_connected() {
  local c; c=$(node_controllers "$1")
  [[ -n $c && $(wc -l <<<"$c") == 1 ]] || { echo "node-$1 has controllers [$(echo $c)], expected one" >&2; return 1; }
  [[ $(cat "/sys/class/nvme/$c/state") == live ]] || { echo "$c is $(cat "/sys/class/nvme/$c/state")" >&2; return 1; }
  [[ $(cat "/sys/class/nvme/$c/hostid") == "${HOSTID[$1]}" ]] ||
    { echo "$c was connected with host ID $(cat "/sys/class/nvme/$c/hostid"), not node-$1's ${HOSTID[$1]}" >&2; return 1; }
  NODE_DISK=$(ls -d "/sys/class/nvme/$c/$c"n* 2>/dev/null | head -n 1)
  [[ -n $NODE_DISK && $(cat "$NODE_DISK/uuid") == "$(nvme_uuid $NSID)" ]] || { echo "$c has no disk of namespace $NSID" >&2; return 1; }
  NODE_DISK=/dev/${NODE_DISK##*/}
  echo "  node-$1: $c live, host ID ${HOSTID[$1]}, disk $NODE_DISK"
}
# node_staged_on N PATH: node N's filesystem at PATH is on its own controller's disk.
node_staged_on() {
  node_connected "$1" || return
  [[ $(nvme_dev_of_mount "$2") == "$NODE_DISK" ]] ||
    { echo "$2 is on $(nvme_dev_of_mount "$2"), not node-$1's $NODE_DISK" >&2; return 1; }
}

# --------------------------------------------------------------------- the reservation, at the target

# observer_report: Reservation Report (extended data structure), in RESV ("gen G", "rtype T", then "reg HOSTID KEY
# STATUS" per registrant: host ID and key in lower-case hex without 0x or dashes, STATUS 1 for the holder). Read
# through a disk node A or B has connected (the report is open to every host, registered or not), or, when neither
# has one, through the observer: a host connected for the read and disconnected after it.
RESV=""
observer_disk() { local c; c=$(node_controllers o); [[ -n $c ]] && ls -d "/sys/class/nvme/$c/$c"n* 2>/dev/null | head -n 1; }
node_disk_any() {
  local n c
  for n in a b; do
    for c in $(node_controllers "$n"); do
      [[ $(cat "/sys/class/nvme/$c/state") == live ]] && ls -d "/sys/class/nvme/$c/$c"n* 2>/dev/null | head -n 1 && return
    done
  done
}
observer_report() {
  local fd answer c disk raw rc=0
  disk=$(node_disk_any)
  if [[ -n $disk ]]; then
    raw=$(nvme resv-report "/dev/${disk##*/}" --eds 2>&1) || { echo "Reservation Report through ${disk##*/} failed: $raw" >&2; return 1; }
    resv_parse "$raw"
    return
  fi
  exec {fd}<>/dev/nvme-fabrics || return
  echo "transport=tcp,traddr=127.0.0.1,trsvcid=$NVME_PORT,nqn=$NVME_NQN,hostnqn=${HOSTNQN[o]},hostid=${HOSTID[o]}" >&"$fd" &&
    read -r answer <&"$fd" || rc=1
  exec {fd}>&-
  ((rc == 0)) || { echo "the observer could not connect" >&2; return 1; }
  vm_wait "the observer's disk" 20 observer_disk >/dev/null || rc=1
  disk=$(observer_disk)
  # udev probes the new disk (blkid opens and reads it): let it finish before the controller goes. A controller
  # deleted under that probe, a second after its connect, once left the worker blocked in its read and the
  # controller's reconnect work running without it (udevd then could not exit at the end).
  udevadm settle --timeout=30 || rc=1
  ((rc == 0)) && raw=$(nvme resv-report "/dev/${disk##*/}" --eds 2>&1) || rc=1
  for c in $(node_controllers o); do echo 1 > "/sys/class/nvme/$c/delete_controller"; done
  vm_wait "the observer gone" 20 sh -c "! grep -lx '${HOSTNQN[o]}' /sys/class/nvme/nvme*/hostnqn >/dev/null 2>&1" || rc=1
  ((rc == 0)) || { echo "Reservation Report through the observer failed: $raw" >&2; return 1; }
  resv_parse "$raw"
}
# udevd_blocked: what keeps udevd from exiting (its workers, where each waits, its kernel stack).
udevd_blocked() {
  local pid
  for pid in $(pgrep -f systemd-udevd); do
    echo "udevd process $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) waits in $(cat "/proc/$pid/wchan" 2>/dev/null)"
    sed 's/^/    /' "/proc/$pid/stack" 2>/dev/null | head -n 12
  done
}
resv_parse() {
  RESV_RAW=$1
  RESV=$(awk -F: '
    function v(s) { s = tolower(s); gsub(/[ \t]|0x|-/, "", s); return s }
    /^gen /     { print "gen " v($2) }
    /^rtype /   { print "rtype " v($2) }
    /hostid/    { h = v($2) }
    /rkey/      { k = v($2) }
    /rcsts/     { s = v($2) }
    /rkey|hostid|rcsts/ && h != "" && k != "" && s != "" { print "reg", h, k, s; h = k = s = "" }' <<<"$1")
}
resv_show() { sed 's/^/  target: /' <<<"$RESV"; }
hostid_hex() { tr -d '-' <<<"${HOSTID[$1]}"; }
# resv_expect HOLDER REGISTERED...: the holder's host (or "none"), and exactly these hosts registered, each with
# a key of its node's tag.
resv_expect() {
  local holder=$1 n want line; shift
  observer_report || return
  resv_show
  if [[ $holder == none ]]; then
    ! grep -qE '^reg .* 1$' <<<"$RESV" || { echo "expected no holder" >&2; return 1; }
    grep -qE '^rtype 0$' <<<"$RESV" || { echo "expected no reservation" >&2; return 1; }
  else
    grep -qE "^reg $(hostid_hex "$holder") ${TAG[$holder]}[0-9a-f]{4} 1\$" <<<"$RESV" ||
      { echo "expected node-$holder to hold with a key of its tag ${TAG[$holder]}" >&2; return 1; }
  fi
  for n in a b; do
    line=$(grep -E "^reg $(hostid_hex "$n") " <<<"$RESV")
    want=no; [[ " $* " == *" $n "* ]] && want=yes
    if [[ -n $line ]]; then
      [[ $want == yes ]] || { echo "node-$n is still registered" >&2; return 1; }
      [[ $(awk '{print $3}' <<<"$line") == "${TAG[$n]}"* ]] || { echo "node-$n registered with a key not of its tag" >&2; return 1; }
    else
      [[ $want == no ]] || { echo "node-$n is not registered" >&2; return 1; }
    fi
  done
  [[ $(grep -c '^reg ' <<<"$RESV") == $# ]] || { echo "other registrants than node(s) $*" >&2; return 1; }
}
# The first read prints nvme-cli's own report too, which is what the parsing above reads.
resv_first_read() { observer_report && sed 's/^/  nvme resv-report: /' <<<"$RESV_RAW" && resv_show; }

# The target restarts and forgets every reservation (nvmet keeps them in memory), as a target's reboot does: its
# ports stop serving the subsystem (the target shuts the hosts' connections; each host keeps its controller and
# disk and reconnects at its next attempt, reconnect_delay: 10 s by default), the namespace is disabled and enabled
# while no host is connected, and the ports serve it again. The flip with the hosts connected raced their rescan:
# a host that read the namespace's change while it was still disabled removed its disk (the mounted filesystem shut
# down) and made a new one for it (seen on a loaded machine).
target_restarts() {
  local ns=$NVMET/subsystems/$NVME_NQN/namespaces/$NSID p
  for p in "$NVMET"/ports/*; do rm "$p/subsystems/$NVME_NQN" || return; done
  echo 0 > "$ns/enable" && echo 1 > "$ns/enable" || return
  for p in "$NVMET"/ports/*; do ln -s "$NVMET/subsystems/$NVME_NQN" "$p/subsystems/$NVME_NQN" || return; done
}

ns_sum() { sha256sum < "$NS_FILE" | cut -d' ' -f1; }

# ------------------------------------------------------------------------------------- the steps

bn_on_fail() {
  writer_stop
  for n in a b; do
    echo "----- node-$n plugin log (tail)"; tail -n 25 "$VM_RESULTS/plugin-$n.log" 2>/dev/null
    node_stop "$n" 2>/dev/null
  done
  observer_report 2>/dev/null && resv_show
}

BN_STARTED=$(vm_now_ms)
mkdir -p "$VM_RESULTS"
rm -f "$VM_RESULTS/xfail"
: > "$VM_RESULTS/plugin-a.log"; : > "$VM_RESULTS/plugin-b.log"
vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs, fencing=$FENCE"
rm -rf "${NODE_DIR[a]}" "${NODE_DIR[b]}"
step plugins-launch       eval 'node_start a && node_start b'
step modules              nvme_modules
pidof systemd-udevd >/dev/null || { BN_OWN_SAN=yes; step udevd vm_udevd_start; }
step target               nvme_target_create 64
step plugins-ready        eval 'node_ready a && node_ready b'
step tags-differ          test "${TAG[a]}" != "${TAG[b]}"
step nothing-reserved     eval 'resv_first_read && resv_expect none'

# A filesystem volume: A holds it, B is refused and leaves nothing, A lets go, B takes it.
A_STAGING=$(node_staging a $VOL); A_TARGET=$(node_target a $VOL)
B_STAGING=$(node_staging b $VOL)
step a-stage              ncsi a stagex $VOL "$A_STAGING" ext4 $(node_ctx a)
step a-on-own-controller  node_staged_on a "$A_STAGING"
fstep a-reserved          resv_expect a a
step a-publish            ncsi a publishx $VOL "$A_STAGING" "$A_TARGET" ext4
step a-write              eval 'SUM=$(bn_write_file "$A_TARGET/data" 4) && [[ -n $SUM ]]'
# The target restarts and forgets every reservation: A's next renewal once it has reconnected (15 s after the
# restart in a quiet run) registers and acquires again instead of reporting the volume FENCED, so B is still
# refused below. Synced first: nothing of A's filesystem is in flight.
fstep a-synced            sync -f "$A_TARGET/data"
fstep target-restarts     eval 'target_restarts && RESTARTED=$(vm_now_ms)'
fstep a-holds-again       eval 'vm_wait "A to hold again (its reconnect and renewal)" 60 resv_expect a a >/dev/null && resv_expect a a &&
                                 echo "  $(( $(vm_now_ms) - RESTARTED )) ms after the restart" && node_staged_on a "$A_STAGING"'
fstep a-reacquired-logged vm_wait "A's renewal to say the target forgot" 30 grep -qF "volume $VOL: the target forgot every registration and the reservation" "$VM_RESULTS/plugin-a.log"
fstep a-not-fenced        eval '! grep -qF "volume $VOL is FENCED" "$VM_RESULTS/plugin-a.log"'
fstep a-data-intact       bn_verify_file "$A_TARGET/data" "$SUM"
fstep b-refused           ncsi_fails FAILED_PRECONDITION b stagex $VOL "$B_STAGING" ext4 $(node_ctx b)
fstep b-names-a-key       eval '[[ $CSI_REPLY == *"${TAG[a]}"* ]]'
fstep b-left-nothing      eval 'node_has_nothing b && resv_expect a a'
step a-unpublish          ncsi a unpublish $VOL "$A_TARGET"
step a-unstage            ncsi a unstage $VOL "$A_STAGING"
step a-released           node_has_nothing a
fstep a-unregistered      resv_expect none
step b-stage              ncsi b stagex $VOL "$B_STAGING" ext4 $(node_ctx b)
step b-on-own-controller  node_staged_on b "$B_STAGING"
fstep b-reserved          resv_expect b b
step b-sees-a-data        eval 'B_TARGET=$(node_target b $VOL) && ncsi b publishx $VOL "$B_STAGING" "$B_TARGET" ext4 &&
                                bn_verify_file "$B_TARGET/data" "$SUM" && ncsi b unpublish $VOL "$B_TARGET"'
step b-unstage            ncsi b unstage $VOL "$B_STAGING"
step b-released           node_has_nothing b
fstep b-unregistered      resv_expect none

if fenced; then
# The race: A and B stage one raw block volume at the same moment (both requests sent before either answer is
# read). Exactly one stages and holds; the other is FAILED_PRECONDITION and leaves nothing at the target or on
# its node, whichever way their commands interleaved.
RACE_VOL=nv-fence-race
declare -A RACE_REPLY
race_stage() {
  local n
  for n in a b; do
    echo "stagex $RACE_VOL $(node_block_staging $n $RACE_VOL) block $(node_ctx $n)" >&"${CLIENT_IN[$n]}" || return
  done
  for n in a b; do
    IFS= read -r -t 240 "RACE_REPLY[$n]" <&"${CLIENT_OUT[$n]}" || { echo "no reply from node-$n's client" >&2; return 1; }
    echo "  node-$n: ${RACE_REPLY[$n]}" | cut -c1-300
  done
  WINNER=""
  for n in a b; do [[ ${RACE_REPLY[$n]} == ok* ]] && WINNER+=$n; done
  [[ $WINNER == a || $WINNER == b ]] || { echo "expected exactly one stage to succeed, got [$WINNER]" >&2; return 1; }
  LOSER=$([[ $WINNER == a ]] && echo b || echo a)
  [[ $(awk '{print $3}' <<<"${RACE_REPLY[$LOSER]}") == FAILED_PRECONDITION: ]] ||
    { echo "node-$LOSER's stage: expected FAILED_PRECONDITION" >&2; return 1; }
  echo "  node-$WINNER staged, node-$LOSER refused"
}
step race-one-stages      race_stage
step race-winner-holds    eval 'resv_expect $WINNER $WINNER && node_has_nothing $LOSER'
step race-winner-unstages eval 'ncsi $WINNER unstage $RACE_VOL "$(node_block_staging $WINNER $RACE_VOL)" &&
                                node_has_nothing $WINNER && resv_expect none'

# The takeover, on a raw block volume: nothing but A's writer writes to the namespace.
A_BSTAGING=$(node_block_staging a $BLOCK_VOL); A_BTARGET=$(node_block_target a $BLOCK_VOL)
B_BSTAGING=$(node_block_staging b $BLOCK_VOL)
step a-stage-block        ncsi a stagex $BLOCK_VOL "$A_BSTAGING" block $(node_ctx a)
step a-publish-block      ncsi a publishx $BLOCK_VOL "$A_BSTAGING" "$A_BTARGET" block
step a-writer             writer_start "$A_BTARGET"
step b-refused-first-seen ncsi_fails FAILED_PRECONDITION b stagex $BLOCK_VOL "$B_BSTAGING" block $(node_ctx b)
step b-first-seen-said    eval '[[ $CSI_REPLY == *"first seen now"* ]] && node_has_nothing b'
step past-takeover-time   sleep $((TAKEOVER + 3))
# The takeover time counts from this refusal at the earliest (it sees A's key changed), as in fencing.sh.
step b-refused-a-alive    eval 'OBSERVED=$(vm_now_ms) && ncsi_fails FAILED_PRECONDITION b stagex $BLOCK_VOL "$B_BSTAGING" block $(node_ctx b)'
step b-alive-said         eval '[[ $CSI_REPLY == *"the holder is alive"* ]] && node_has_nothing b'
step a-killed             eval 'node_kill a && KILLED=$(vm_now_ms) && echo "  node-a killed -9 at $KILLED"'
step writer-goes-on       vm_wait "writes after the kill" 30 sh -c "[ \$(awk -v t=$KILLED '\$2 == \"ok\" && \$3 > t' $WRITES | wc -l) -ge 5 ]"

step b-takes-over         node_takes_over b $BLOCK_VOL "$B_BSTAGING"
step takeover-logged      grep -F "took over volume $BLOCK_VOL from node key ${TAG[a]}" "$VM_RESULTS/plugin-b.log"
step b-holds-a-cut-off    resv_expect b b
step ns-sum-at-takeover   eval 'SUM_T1=$(ns_sum) && echo "  backing file sha256 $SUM_T1"'
step a-writes-fail        vm_wait "A's writes failing" 60 sh -c "[ \$(awk -v t=$TOOK '\$2 == \"fail\" && \$3 > t' $WRITES | wc -l) -ge 5 ]"
step a-writes-refused-at-target eval 'awk -v t=$TOOK '"'"'$2 == "fail" && $3 > t {$1 = $2 = $3 = ""; print}'"'"' $WRITES | sort | uniq -c | head -n 3 &&
                                awk -v t=$TOOK '"'"'$2 == "fail" && $3 > t'"'"' $WRITES | tail -n 1 | grep -qi "invalid exchange"'
step no-a-write-succeeds  eval '[[ $(oks_after $((TOOK + 500))) == 0 ]]'
step a-keeps-trying       eval 'MARK=$(vm_now_ms) && vm_wait "more failed writes" 60 sh -c "[ \$(awk -v t=$MARK '"'"'\$2 == \"fail\" && \$3 > t'"'"' $WRITES | wc -l) -ge 5 ]"'
step ns-unchanged         eval '[[ $(ns_sum) == "$SUM_T1" ]]'
step writer-stopped       writer_stop
step ns-only-good-writes  lun_holds_only_good_writes "$NS_FILE"

step a-restarted          eval 'node_start a && node_ready a'
a_fenced() { ncsi a health $BLOCK_VOL "$A_BTARGET" && echo "  node-a: ${CSI_REPLY#ok }" | cut -c1-400 &&
             [[ $CSI_REPLY == *"INACCESSIBLE/Fenced"* ]]; }
step a-health-fenced      vm_wait "NodeGetVolumeHealth of node-a to say Fenced" 60 a_fenced
step a-stats-abnormal     eval 'ncsi a stats $BLOCK_VOL "$A_BTARGET" "$A_BSTAGING" && echo "  node-a: ${CSI_REPLY#ok }" | cut -c1-400 &&
                                [[ $CSI_REPLY == *"abnormal=true"* ]]'
step a-fenced-logged      grep -F "volume $BLOCK_VOL is FENCED" "$VM_RESULTS/plugin-a.log"
step a-unpublish-block    ncsi a unpublish $BLOCK_VOL "$A_BTARGET"
# Its flush is refused under B's reservation (EBADE): dropped with a warning, the controller deleted, the record gone.
step a-unstage-block      ncsi a unstage $BLOCK_VOL "$A_BSTAGING"
step a-flush-refused      grep -F "cannot be flushed, the storage refuses" "$VM_RESULTS/plugin-a.log"
step b-untouched          eval 'node_has_nothing a && resv_expect b b'
step b-unstage-block      ncsi b unstage $BLOCK_VOL "$B_BSTAGING"
step nothing-registered   eval 'node_has_nothing b && resv_expect none'

fi

step plugins-stop         eval 'node_stop a && node_stop b'
step node-clean           eval 'udevadm settle --timeout=30; nvme_leftovers'
step nothing-mounted      eval '! findmnt -rn -o TARGET | grep -F /tmp/bn-nvme-fencing-'
step no-staging-records   eval '[[ -z $(ls -A ${NODE_DIR[a]}/state/volumes ${NODE_DIR[b]}/state/volumes 2>/dev/null | grep -v :) ]]'
step target-delete        nvme_target_delete
[[ $BN_OWN_SAN == yes ]] && step udevd-stop eval 'udevadm control --exit && vm_wait "udevd to exit" 60 sh -c "! pidof systemd-udevd" || { udevd_blocked; false; }'
echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
