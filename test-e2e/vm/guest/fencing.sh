#!/bin/bash
# fencing: two nodes on one LUN, fenced at the storage with SCSI-3 persistent reservations.
#
# Node A and node B are two plugin instances in this guest, each with its own --node-id, state dir,
# kubelet root, socket and metrics port, and its own open-iscsi interface (iface.initiatorname): two
# initiators, so two I_T nexuses on the LUN. The array is LIO's iSCSI target (configfs), not tgt: tgt
# (1.0.x) implements type 5 reservations but not PREEMPT AND ABORT (its service action table has it
# commented out), and it drops a nexus's registration with the session; LIO implements both as SPC-4 says.
# One portal, one path per node, and no multipathd: it would merge both nodes' paths of the one WWID into
# one map, which two real nodes never share.
#
#   A stages (ext4) and writes; the array restarts without its reservations (the LUN made again) and A's
#   renewal reserves again; B's stage is FAILED_PRECONDITION naming A's key and leaves nothing (no
#   session, disk or registration of B); A unstages (no registration left); B stages and unstages.
#   A stages a raw block volume with a writer (sequence-numbered O_DIRECT writes); A alive and renewing:
#   B stays refused past the takeover time (the key changed). A's plugin is killed -9 (renewals stop, the
#   publication and the writer stay); B's retries are refused until A's key has stood still for the takeover
#   time, then B preempts (PREEMPT AND ABORT); A's writes fail at the target, and the LUN's backing file is
#   unchanged while A keeps trying; every sequence number on the LUN is one A saw succeed. A's plugin,
#   restarted, reports the volume Fenced and unstages it without touching B's reservation; B unstages;
#   nothing is left, on the node or at the target.
#   A fenced volume gains a path after the stage (only node A has a volume, so multipathd runs for this part
#   alone): the target gets a second portal, A stages a raw block volume (fencing=required) over both with
#   the writer on it, and portal 2's session is logged out behind the plugin's back; A's repair loop (every
#   5 s) logs in again, scans the LUN on the new session, registers the new I_T nexus with the key the
#   reservation holds and only then has multipathd add it: both paths active, the new nexus registered with
#   the holder's key (READ FULL STATUS), the registration logged before the add, no write failed. When
#   multipathd took the disk on its uevent (its log, timestamped here) is printed against the registration.
#   Then both sessions are logged out behind the plugin's back: the map (this WWID alone queues, no_path_retry
#   300) holds the writer's I/O; A's repair logs both portals in again, reads the reservation through a new disk
#   (no path of the map is left to read it through), registers both new nexuses and only then has multipathd
#   add them: both paths active within two repair intervals and a margin, each new nexus registered with a key of
#   A's tag (the holder's nexus is an old session's, its key left at the generation it had), no write failed, data
#   written before reads back the same.
#
# vm-limit: 1100  (its boot's, plus 100 s: 151-525 s in make test runs on an older machine, about 1.6x that here)
HERE=$(dirname "$(readlink -f "$0")")
BN_SCENARIO=fencing
source "$HERE/iscsi-lib.sh"
source "$HERE/two-nodes-lib.sh"

RENEW=2s
TAKEOVER=8            # s: --fencing-takeover-after, at least 3 renewals
REPAIR_INTERVAL=5     # s: --repair-interval (the default 30 s would make the repair part wait that long)
IQN=iqn.2024-01.dev.blocknode:fence
PORTAL=127.0.0.1:3260
PORTAL_2=127.0.0.2:3260  # the repair part's second portal (same TPG: a second path, a second I_T nexus)
LIO=/sys/kernel/config/target
STORE=$LIO/core/fileio_0/fence
TPG=$LIO/iscsi/$IQN/tpgt_1
LUN_FILE=$VM_LUN_DIR/fence.img
VOL=fence-vol
BLOCK_VOL=fence-blk
declare -A INITIATOR
for n in a b; do
  NODE_DIR[$n]=/tmp/bn-fencing-$n
  INITIATOR[$n]=iqn.2024-01.dev.blocknode:node-$n
done
METRICS[a]=127.0.0.1:9811
METRICS[b]=127.0.0.1:9812
NODE_PLUGIN_ARGS=(--fencing-renew-interval "$RENEW" --fencing-takeover-after "${TAKEOVER}s"
                  --repair-interval "${REPAIR_INTERVAL}s")

# --------------------------------------------------------------------------------- the array: LIO

lio_create() {
  # LIO writes the reservation state (APTPL) under its db_root on every PR OUT, even with APTPL off, and fails
  # the command (LOGICAL UNIT COMMUNICATION FAILURE) when it cannot: /etc/target must exist before
  # target_core_mod loads (else it takes /var/target, which does not exist either). Overlay only.
  mkdir -p /etc/target/pr || return
  modprobe -a configfs target_core_mod target_core_file iscsi_target_mod || return
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return
  mkdir -p "$VM_LUN_DIR"
  mountpoint -q "$VM_LUN_DIR" || mount -t tmpfs -o size=1g,mode=700 bn-luns "$VM_LUN_DIR" || return
  truncate -s 128M "$LUN_FILE" && mkdir -p "$STORE" || return
  echo "fd_dev_name=$LUN_FILE,fd_dev_size=$((128 * 1024 * 1024))" > "$STORE/control" || return
  echo bnfence0001 > "$STORE/wwn/vpd_unit_serial" && echo 1 > "$STORE/enable" || return
  mkdir -p "$TPG/np/$PORTAL" "$TPG/lun/lun_0" || return
  ln -s "$STORE" "$TPG/lun/lun_0/store" || return
  echo 0 > "$TPG/attrib/authentication" && echo 0 > "$TPG/attrib/generate_node_acls" || return
  local n
  for n in a b; do
    mkdir -p "$TPG/acls/${INITIATOR[$n]}/lun_0" && ln -s "$TPG/lun/lun_0" "$TPG/acls/${INITIATOR[$n]}/lun_0/map" ||
      return
  done
  echo 1 > "$TPG/enable" && vm_wait "LIO listening on $PORTAL" 30 vm_tcp_listening "${PORTAL##*:}"
}

lio_delete() {
  local n
  [[ -d $TPG ]] || return 0
  echo 0 > "$TPG/enable" 2>/dev/null
  for n in a b; do
    rm -f "$TPG/acls/${INITIATOR[$n]}/lun_0/map"; rmdir "$TPG/acls/${INITIATOR[$n]}/lun_0" "$TPG/acls/${INITIATOR[$n]}"
  done
  [[ -d $TPG/np/$PORTAL_2 ]] && rmdir "$TPG/np/$PORTAL_2"
  rm -f "$TPG/lun/lun_0/store"; rmdir "$TPG/lun/lun_0" "$TPG/np/$PORTAL" "$TPG" "$LIO/iscsi/$IQN"
  rmdir "$STORE" "$LIO/core/fileio_0"
  umount "$VM_LUN_DIR"
}

# The array restarts without persisting reservations (APTPL off): the LUN's device is deleted and made again,
# same backing file and serial, so the initiators find the same LUN with no registration, no reservation and
# PRgeneration 0. The ACLs' and the TPG's LUN go first (LIO refuses to delete a device a LUN still uses).
lio_restart_lun() {
  local n
  for n in a b; do rm -f "$TPG/acls/${INITIATOR[$n]}/lun_0/map" && rmdir "$TPG/acls/${INITIATOR[$n]}/lun_0" || return; done
  rm -f "$TPG/lun/lun_0/store" && rmdir "$TPG/lun/lun_0" "$STORE" || return
  mkdir -p "$STORE" || return
  echo "fd_dev_name=$LUN_FILE,fd_dev_size=$((128 * 1024 * 1024))" > "$STORE/control" || return
  echo bnfence0001 > "$STORE/wwn/vpd_unit_serial" && echo 1 > "$STORE/enable" || return
  mkdir -p "$TPG/lun/lun_0" && ln -s "$STORE" "$TPG/lun/lun_0/store" || return
  for n in a b; do
    mkdir -p "$TPG/acls/${INITIATOR[$n]}/lun_0" && ln -s "$TPG/lun/lun_0" "$TPG/acls/${INITIATOR[$n]}/lun_0/map" ||
      return
  done
}

# What the target says of the LUN's persistent reservation (LIO's pr/ attributes).
pr_state() { echo "holder: $(cat "$STORE/pr/res_holder")"; echo "registered: $(cat "$STORE/pr/res_pr_registered_i_pts")"; }
pr_show() { pr_state | sed 's/^/  target: /'; }
# pr_expect HOLDER REGISTERED...: the holder's initiator (or "none"), and exactly these initiators registered.
pr_expect() {
  local holder=$1 state registered want n; shift
  state=$(pr_state); pr_show
  if [[ $holder == none ]]; then
    grep -qi "no.*reservation\|no SPC-3 Reservation" <<<"$(cat "$STORE/pr/res_holder")" ||
      { echo "expected no reservation holder" >&2; return 1; }
  else
    grep -F "holder:" <<<"$state" | grep -qF "${INITIATOR[$holder]}" || { echo "expected holder node-$holder" >&2; return 1; }
  fi
  registered=$(cat "$STORE/pr/res_pr_registered_i_pts")
  for n in a b; do
    want=no
    [[ " $* " == *" $n "* ]] && want=yes
    if grep -qF "${INITIATOR[$n]}" <<<"$registered"; then
      [[ $want == yes ]] || { echo "node-$n is still registered" >&2; return 1; }
    else
      [[ $want == no ]] || { echo "node-$n is not registered" >&2; return 1; }
    fi
  done
}

# ------------------------------------------------------------------------------- the two nodes

iface_create() {
  iscsiadm -m iface -I "fence-$1" -o new >/dev/null &&
    iscsiadm -m iface -I "fence-$1" -o update -n iface.initiatorname -v "${INITIATOR[$1]}" >/dev/null
}

node_ctx() { echo "targetPortal=$PORTAL iqn=$IQN lun=0 iface=fence-$1"; }

# The SCSI disk node N's session brought in (its iface's session), or nothing.
node_disk() {
  local s host
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/ifacename" 2>/dev/null) == "fence-$1" ]] || continue
    host=$(vm_session_host "${s##*/}") || continue
    ls "/sys/class/scsi_host/host$host/device/session${s##*session}/target$host:0:0/$host:0:0:0/block" 2>/dev/null
  done
}
node_sessions() {
  local s count=0
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/ifacename" 2>/dev/null) == "fence-$1" ]] && count=$((count + 1))
  done
  echo "$count"
}
# node_has_nothing N: no session, disk or node record of node N's interface.
node_has_nothing() {
  [[ $(node_sessions "$1") == 0 ]] || { echo "node-$1 still has a session" >&2; return 1; }
  [[ -z $(find /etc/iscsi/nodes -name "fence-$1" 2>/dev/null) ]] || { echo "node-$1's node record is left" >&2; return 1; }
}

# The initiator's own view of the reservation, through node N's disk (sg3-utils).
sg_view() {
  local disk
  disk=$(node_disk "$1") || return
  [[ -n $disk ]] || { echo "node-$1 has no disk" >&2; return 1; }
  sg_persist -n -i -k -d "/dev/$disk" | sed 's/^/  sg_persist -k: /'
  sg_persist -n -i -r -d "/dev/$disk" | sed 's/^/  sg_persist -r: /'
}

# The LUN's backing file, for the writer's checks (two-nodes-lib.sh).
lun_sum() { sha256sum < "$LUN_FILE" | cut -d' ' -f1; }

# ------------------------------------------------------------- a fenced volume gains a path (repair)

MP_VOL=fence-mp
MP_LOG=$VM_RESULTS/multipathd.log
MP_PID=""
mp_ctx() { echo "targetPortal=$PORTAL portals=$PORTAL_2 iqn=$IQN lun=0 iface=fence-a fencing=required"; }

# multipathd in the foreground, each line of its log stamped with the time it was read (ms): when it took a
# disk on its uevent is what the registration is measured against.
mp_start() {
  modprobe -a dm_multipath dm_round_robin dm_service_time || return
  mkdir -p /etc/multipath
  printf '%s\n' "$VM_MULTIPATH_CONF" > /etc/multipath.conf
  : > "$MP_LOG"
  ( multipathd -d -s -v3 2>&1 | while IFS= read -r line; do echo "$(vm_now_ms) $line"; done >> "$MP_LOG" ) &
  MP_PID=$!
  vm_wait "multipathd's socket" 30 vm_unix_listening @/org/kernel/linux/storage/multipathd &&
    vm_wait "multipathd to finish its startup" 30 sh -c 'multipathd show daemon | grep -qE "idle|running"'
}
mp_stop() {
  [[ -n $MP_PID ]] || return 0
  multipathd shutdown >/dev/null
  vm_wait "multipathd to exit" 60 sh -c '! pidof multipathd >/dev/null' && wait "$MP_PID"
  MP_PID=""
  rm -f /etc/multipath.conf "$MP_QUEUE_CONF"
}

# The volume's map queues I/O while it has no path, for up to 300 checker intervals (polling_interval 1: about 5
# minutes, far beyond this part), where the boot's default is no_path_retry fail: with every session gone, the map
# must hold the writer's I/O until the repair brings a path back, as a production map with a no_path_retry number
# does. Set for this WWID alone (the map's name: user_friendly_names no).
MP_QUEUE_CONF=/etc/multipath/conf.d/bn-fence-queue.conf
mp_queues() { dmsetup table "$(mp_map)" 2>/dev/null | grep -q queue_if_no_path; }
mp_queue_set() {
  local wwid
  wwid=$(mp_map) && [[ -n $wwid ]] || { echo "no multipath map" >&2; return 1; }
  mkdir -p "${MP_QUEUE_CONF%/*}" &&
    printf 'multipaths {\n    multipath {\n        wwid %s\n        no_path_retry 300\n    }\n}\n' "$wwid" \
      > "$MP_QUEUE_CONF" && multipathd reconfigure >/dev/null &&
    vm_wait "queue_if_no_path in $wwid's table" 30 mp_queues
}

# The one multipath map (only this part has one): its name, and its paths in state A (active) or F (failed).
mp_map() { dmsetup ls --target multipath | awk '/\(/ {print $1; exit}'; }  # none: "No devices found"
mp_paths() { dmsetup status "$(mp_map)" 2>/dev/null | grep -oE "[0-9]+:[0-9]+ $1" | wc -l; }
mp_two_active() { [[ $(mp_paths A) == 2 && $(mp_paths F) == 0 ]]; }

# Node A's session through portal 2, as "SID DISK".
a_session_2() {
  local s sid host
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/ifacename" 2>/dev/null) == fence-a ]] || continue
    sid=${s##*session}
    [[ $(cat "/sys/class/iscsi_connection/connection$sid:0/persistent_address"):$(cat \
       "/sys/class/iscsi_connection/connection$sid:0/persistent_port") == "$PORTAL_2" ]] 2>/dev/null || continue
    host=$(vm_session_host "session$sid") || continue
    echo "$sid $(ls "/sys/class/scsi_host/host$host/device/session$sid/target$host:0:0/$host:0:0:0/block" 2>/dev/null)"
    return 0
  done
  return 1
}
# A session's ISID. The guest's kernel has no isid attribute in sysfs; open-iscsi makes it 0x00023d followed by the
# session's number (seen in LIO's registrations: session 3 registers as ...,i,0x00023d000003).
isid_of() { cat "/sys/class/iscsi_session/session$1/isid" 2>/dev/null || printf '00023d%06x\n' "$1"; }

a_session_2_out() {
  local sid disk
  read -r sid disk < <(a_session_2) || { echo "no session of node-a through $PORTAL_2" >&2; return 1; }
  OLD_ISID=$(isid_of "$sid")
  echo "  node-a's session $sid through $PORTAL_2 (disk $disk, ISID ${OLD_ISID:-?}) logged out behind the plugin's back"
  LOST=$(vm_now_ms)
  iscsiadm -m session -r "$sid" -u >/dev/null
}

a_path_repaired() {
  vm_wait "node-a's repair to bring portal 2's path back" 60 grep -qE \
    "volume $MP_VOL: path repair brought back" "$VM_RESULTS/plugin-a.log" &&
    vm_wait "both paths active" 30 mp_two_active || return
  read -r NEW_SID NEW_DISK < <(a_session_2) || { echo "no new session through $PORTAL_2" >&2; return 1; }
  NEW_ISID=$(isid_of "$NEW_SID")
  echo "  both paths active $(( $(vm_now_ms) - LOST )) ms after the logout (repair every ${REPAIR_INTERVAL} s):" \
       "session $NEW_SID, disk $NEW_DISK, ISID ${NEW_ISID:-?} (was ${OLD_ISID:-?})"
  grep -E "volume $MP_VOL: (path repair|registered returned)" "$VM_RESULTS/plugin-a.log" | sed 's/^/  /' | cut -c1-300
}

# READ FULL STATUS through the new disk: every registration with its key and its initiator port's transport ID
# (iSCSI: name,i,0xISID); the new session's must hold the reservation holder's key. Holder and registrations are
# taken from one READ FULL STATUS, and read again until they agree or 20 s pass: A renews every 2 s, path by path,
# so one answer can fall between two paths' REGISTERs of a round.
new_nexus_key() {
  FULL=$(sg_persist -n -i -s -d "/dev/$NEW_DISK") || return
  read -r HOLDER KEY < <(awk -v isid="$(sed 's/^0x//; s/^0*//' <<<"$NEW_ISID")" '
    /Key=0x/ { match($0, /Key=0x[0-9a-f]+/); k = substr($0, RSTART + 4, RLENGTH - 4) }
    /<< Reservation holder >>/ { h = k }
    /port id/ { t = tolower($0); sub(/.*,i,0x0*/, "", t); if (t == isid) n = k }
    END { print (h == "" ? "none" : h), (n == "" ? "nothing" : n) }' <<<"$FULL")
  [[ $KEY == "$HOLDER" ]]
}
new_nexus_registered() {
  vm_wait "the new nexus to show the holder's key" 20 new_nexus_key
  sed 's/^/  sg_persist -s: /' <<<"$FULL" | grep -E 'Key=|port id|holder' | head -n 12
  pr_show
  echo "  new nexus (ISID $NEW_ISID): registered with $KEY; the reservation held by $HOLDER"
  [[ $KEY == "$HOLDER" ]] || { echo "the new path is not registered with the holder's key" >&2; return 1; }
}

# The order, in time: multipathd's uevent handling of the new disk, the plugin's registration line (logged after
# REGISTER and the second READ, before multipathd is asked), multipathd's add of the path.
registration_timeline() {
  local reg_line reg_ms uevent_ms added_ms
  reg_line=$(grep -E "volume $MP_VOL: registered returned path\(s\) \[$NEW_DISK\] with key [0-9a-f]+ before adding" \
    "$VM_RESULTS/plugin-a.log" | tail -n 1)
  [[ -n $reg_line ]] || { echo "no registration line for $NEW_DISK in node-a's log" >&2; return 1; }
  reg_ms=$(date -d "$(grep -oE '^[0-9T:.-]+Z' <<<"$reg_line")" +%s%3N 2>/dev/null)
  # multipathd's lines from the new disk's add uevent on (times are when this shell read them from its pipe).
  uevent_ms=$(awk -v s="/session$NEW_SID/" -v d="/block/$NEW_DISK'" 'index($0, "uevent '"'"'add'"'"'") && index($0, s) && index($0, d) {print $1; exit}' "$MP_LOG")
  added_ms=$(awk -v t="${uevent_ms:-0}" -v d="$NEW_DISK " '$1 >= t && index($0, d) && /path added to devmap/ {print $1; exit}' "$MP_LOG")
  awk -v t="${LOST:-0}" '$1 >= t && /operator|uevent .add.|path added to devmap|orphan/' "$MP_LOG" | head -n 12 | sed 's/^/  multipathd: /'
  local lead=$(( ${uevent_ms:-0} - ${reg_ms:-0} ))
  echo "  registration logged at ${reg_ms:-?}; multipathd read the new disk's add uevent at ${uevent_ms:-?}" \
       "($(( lead < 0 ? -lead : lead )) ms $( ((lead >= 0)) && echo after || echo before ) the registration) and added" \
       "it to the map at ${added_ms:-?}"
}

# Every session of the volume logged out behind the plugin's back. Something must hold the map open while it has
# no path (here this shell, as a pod's process holds its raw block device): multipathd removes a map whose last
# path went when nothing has it open, and the writer opens the device anew for each write.
MP_HOLD=""
MP_DATA=/tmp/bn-fence-mp-data
mp_data_written() {
  head -c $((64 * 1024)) /dev/urandom > "$MP_DATA" &&
    dd if="$MP_DATA" of="$A_MTARGET" bs=4096 seek=1024 oflag=direct conv=notrunc status=none &&
    MP_DATA_SUM=$(sha256sum < "$MP_DATA" | cut -d' ' -f1)
}
mp_data_reads_back() {
  local now
  now=$(dd if="$A_MTARGET" bs=4096 skip=1024 count=16 iflag=direct status=none | sha256sum | cut -d' ' -f1)
  echo "  64 KiB written before the logout: sha256 $MP_DATA_SUM, read back through the map: $now"
  [[ $now == "$MP_DATA_SUM" ]]
}
a_isids() {
  local s
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s && $(cat "$s/ifacename" 2>/dev/null) == fence-a ]] && isid_of "${s##*session}"
  done
}
a_no_session() { [[ $(node_sessions a) == 0 ]]; }
a_all_sessions_out() {
  OLD_ISIDS=$(a_isids | xargs)
  exec {MP_HOLD}<"$A_MTARGET" || return
  ALL_GONE=$(vm_now_ms)
  iscsiadm -m node -T "$IQN" -I fence-a -u >/dev/null || return
  vm_wait "every session of node-a gone" 30 a_no_session || return
  echo "  node-a's sessions (ISIDs $OLD_ISIDS) logged out in $(( $(vm_now_ms) - ALL_GONE )) ms; the map:" \
       "$(dmsetup status "$(mp_map)" | cut -c1-160)"
}
# The bound: two repair intervals and a margin for the logout itself, the logins, the scans and the disks' probes on
# a loaded TCG guest (the one-session repair above took 8.5-12.8 s of its own at load 10-13, this one 30 s at 17).
MP_ALL_BOUND=$((2 * REPAIR_INTERVAL + 80))
a_all_paths_repaired() {
  vm_wait "both paths back by the repair, within two intervals and a margin" "$MP_ALL_BOUND" mp_two_active || return
  local took=$(( $(vm_now_ms) - ALL_GONE ))
  NEW_ISIDS=$(a_isids | xargs)
  echo "  both paths active $took ms after every session was logged out (bound ${MP_ALL_BOUND} s, repair every" \
       "${REPAIR_INTERVAL} s); ISIDs now $NEW_ISIDS (were $OLD_ISIDS)"
  grep -E "volume $MP_VOL: (no path of its multipath map serves|registered returned|path repair)" \
    "$VM_RESULTS/plugin-a.log" | tail -n 3 | sed 's/^/  /' | cut -c1-400
  # A registration whose first read went through one of the disks it registered: no path of the map served.
  awk '/registered returned path\(s\) \[/ && /volume '"$MP_VOL"':/ {
         d = $0; sub(/.*path\(s\) \[/, "", d); sub(/\].*/, "", d)
         r = $0; sub(/.*reservation read through \/dev\//, "", r); sub(/,.*/, "", r)
         if (index(", " d ", ", ", " r ", ")) found = 1 }
       END { exit !found }' "$VM_RESULTS/plugin-a.log" ||
    { echo "no registration logged whose reservation was read through a new disk" >&2; return 1; }
}
# READ FULL STATUS through one new disk: the reservation still held by a key of node-a's tag, and each ISID of
# node-a's new sessions registered with a key of that tag (so its writes are allowed under type 5). Not with the
# holder's key itself, as in the one-session case above: the holder's nexus here is an old session's ISID, gone with
# its session, so its key stays at the generation it had then, while the renewal moves the new nexuses on (the repair
# registered them with exactly that held key; its log line says which).
all_nexus_keys() {
  local disk isid key
  disk=$(node_disk a | head -n 1)  # not chained: under pipefail node_disk may die of SIGPIPE once head has its line
  [[ -n $disk ]] && FULL=$(sg_persist -n -i -s -d "/dev/$disk") || return
  HOLDER=$(awk '/Key=0x/ { match($0, /Key=0x[0-9a-f]+/); k = substr($0, RSTART + 4, RLENGTH - 4) }
    /<< Reservation holder >>/ { print k; exit }' <<<"$FULL")
  [[ $HOLDER == "0x${TAG[a]}"* ]] || return 1  # sg_persist prints keys as 0x...
  NEW_KEYS=""
  for isid in $NEW_ISIDS; do
    key=$(awk -v isid="$(sed 's/^0x//; s/^0*//' <<<"$isid")" '
      /Key=0x/ { match($0, /Key=0x[0-9a-f]+/); k = substr($0, RSTART + 4, RLENGTH - 4) }
      /port id/ { t = tolower($0); sub(/.*,i,0x0*/, "", t); if (t == isid) n = k }
      END { print n }' <<<"$FULL")
    [[ $key == "0x${TAG[a]}"* ]] || return 1
    NEW_KEYS="$NEW_KEYS $isid=$key"
  done
}
all_nexuses_registered() {
  vm_wait "each new nexus registered with node-a's key" 20 all_nexus_keys ||
    { sed 's/^/  sg_persist -s: /' <<<"$FULL"; return 1; }
  sed 's/^/  sg_persist -s: /' <<<"$FULL" | grep -E 'Key=|port id|holder' | head -n 16
  echo "  new nexuses registered:$NEW_KEYS; the reservation held by $HOLDER (node-a's tag ${TAG[a]}; the repair" \
       "registered them with $(grep -oE "registered returned path\(s\) \[[a-z]+, [a-z]+\] with key [0-9a-f]+" \
       "$VM_RESULTS/plugin-a.log" | tail -n 1 | awk '{print $NF}'))"
}
# The order where it matters most (the map's queued writes go down the first path it gets): the registration of
# the new disks against multipathd's handling of their add uevents and its adds to the map.
all_registration_timeline() {
  local line reg_ms disks d uevent_ms added_ms
  line=$(grep -E "volume $MP_VOL: registered returned path\(s\) \[[a-z]+, [a-z]+\]" "$VM_RESULTS/plugin-a.log" | tail -n 1)
  [[ -n $line ]] || { echo "  (the new disks were registered in separate passes)"; return 0; }
  reg_ms=$(date -d "$(grep -oE '^[0-9T:.-]+Z' <<<"$line")" +%s%3N 2>/dev/null)
  disks=$(sed 's/.*path(s) \[//; s/\].*//; s/,//g' <<<"$line")
  for d in $disks; do
    uevent_ms=$(awk -v t="$ALL_GONE" -v d="/block/$d'" '$1 >= t && index($0, "uevent '"'"'add'"'"'") && index($0, d) {print $1; exit}' "$MP_LOG")
    added_ms=$(awk -v t="$ALL_GONE" -v d="$d " '$1 >= t && index($0, d) && /path added to devmap/ {print $1; exit}' "$MP_LOG")
    echo "  $d: registration logged at ${reg_ms:-?}; multipathd read its add uevent at ${uevent_ms:-?}" \
         "($(( ${uevent_ms:-0} - ${reg_ms:-0} )) ms after), added it to the map at ${added_ms:-?}"
  done
}
mp_hold_closed() { [[ -z $MP_HOLD ]] || exec {MP_HOLD}<&-; MP_HOLD=""; }

# ------------------------------------------------------------------------------------- the steps

bn_on_fail() {
  writer_stop
  for n in a b; do
    echo "----- node-$n plugin log (tail)"; tail -n 25 "$VM_RESULTS/plugin-$n.log" 2>/dev/null
    node_stop "$n" 2>/dev/null
  done
  pr_show 2>/dev/null
  mp_hold_closed
  mp_stop >/dev/null 2>&1
  vm_initiator_teardown >/dev/null 2>&1
  lio_delete >/dev/null 2>&1
  iscsiadm -k 0 >/dev/null 2>&1
  udevadm control --exit 2>/dev/null
}

BN_STARTED=$(vm_now_ms)
mkdir -p "$VM_RESULTS"
: > "$VM_RESULTS/plugin-a.log"; : > "$VM_RESULTS/plugin-b.log"
vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs"
rm -rf "${NODE_DIR[a]}" "${NODE_DIR[b]}"
step plugins-launch       eval 'node_start a && node_start b'
step modules              modprobe -a iscsi_tcp sd_mod ext4
step udevd                vm_udevd_start
step iscsid               vm_iscsid_start
step lio-target           lio_create
step ifaces               eval 'iface_create a && iface_create b'
step plugins-ready        eval 'node_ready a && node_ready b'
step tags-differ          test "${TAG[a]}" != "${TAG[b]}"

A_STAGING=$(node_staging a $VOL); A_TARGET=$(node_target a $VOL)
B_STAGING=$(node_staging b $VOL)
step a-stage              ncsi a stagex $VOL "$A_STAGING" ext4 $(node_ctx a)
step a-reserved           pr_expect a a
step a-initiator-view     sg_view a
step a-publish            ncsi a publishx $VOL "$A_STAGING" "$A_TARGET" ext4
step a-write              eval 'SUM=$(bn_write_file "$A_TARGET/data" 4) && [[ -n $SUM ]]'
# The array restarts and forgets the reservation (its PRgeneration back at 0): A's next renewal registers and
# reserves again instead of reporting the volume FENCED, so B is still refused below. Synced first: nothing of
# A's filesystem is in flight while the LUN is away.
step a-synced             sync -f "$A_TARGET/data"
step target-restarts      lio_restart_lun
step a-reserved-again     vm_wait "A's renewal to reserve again" 30 grep -qF "the target forgot every registration and the reservation" "$VM_RESULTS/plugin-a.log"
step a-holds-again        eval 'pr_expect a a && ! grep -qF "volume $VOL is FENCED" "$VM_RESULTS/plugin-a.log"'
step a-data-intact        bn_verify_file "$A_TARGET/data" "$SUM"
step b-refused            ncsi_fails FAILED_PRECONDITION b stagex $VOL "$B_STAGING" ext4 $(node_ctx b)
step b-names-a-key        eval '[[ $CSI_REPLY == *"reservation key ${TAG[a]}"* ]]'
step b-left-nothing       eval 'node_has_nothing b && pr_expect a a'
step a-unpublish          ncsi a unpublish $VOL "$A_TARGET"
step a-unstage            ncsi a unstage $VOL "$A_STAGING"
step a-released           eval 'pr_expect none && node_has_nothing a'
step b-stage              ncsi b stagex $VOL "$B_STAGING" ext4 $(node_ctx b)
step b-reserved           pr_expect b b
step b-sees-a-data        eval 'B_TARGET=$(node_target b $VOL) && ncsi b publishx $VOL "$B_STAGING" "$B_TARGET" ext4 &&
                                bn_verify_file "$B_TARGET/data" "$SUM" && ncsi b unpublish $VOL "$B_TARGET"'
step b-unstage            ncsi b unstage $VOL "$B_STAGING"
step b-released           eval 'pr_expect none && node_has_nothing b'

# The takeover, on a raw block volume: nothing but A's writer writes to the LUN.
A_BSTAGING=$(node_block_staging a $BLOCK_VOL); A_BTARGET=$(node_block_target a $BLOCK_VOL)
B_BSTAGING=$(node_block_staging b $BLOCK_VOL)
step a-stage-block        ncsi a stagex $BLOCK_VOL "$A_BSTAGING" block $(node_ctx a)
step a-publish-block      ncsi a publishx $BLOCK_VOL "$A_BSTAGING" "$A_BTARGET" block
step a-writer             writer_start "$A_BTARGET"
step b-refused-first-seen ncsi_fails FAILED_PRECONDITION b stagex $BLOCK_VOL "$B_BSTAGING" block $(node_ctx b)
step b-first-seen-said    eval '[[ $CSI_REPLY == *"first seen now"* ]]'
step past-takeover-time   sleep $((TAKEOVER + 3))
# This refusal sees A's keys changed, so B's observation of them starts again within it: the takeover time
# counts from here at the earliest (docs/design/fencing.md, "The takeover rule"), not from the kill, which may come sooner
# after it than a renewal interval (A's last renewal then stood still for part of the time before the kill).
step b-refused-a-alive    eval 'OBSERVED=$(vm_now_ms) && ncsi_fails FAILED_PRECONDITION b stagex $BLOCK_VOL "$B_BSTAGING" block $(node_ctx b)'
step b-alive-said         eval '[[ $CSI_REPLY == *"the holder is alive"* ]]'
step a-killed             eval 'node_kill a && KILLED=$(vm_now_ms) && echo "  node-a killed -9 at $KILLED"'
step writer-goes-on       vm_wait "writes after the kill" 30 sh -c "[ \$(awk -v t=$KILLED '\$2 == \"ok\" && \$3 > t' $WRITES | wc -l) -ge 5 ]"

step b-takes-over         node_takes_over b $BLOCK_VOL "$B_BSTAGING"
step takeover-logged      grep -F "took over volume $BLOCK_VOL from node key ${TAG[a]}" "$VM_RESULTS/plugin-b.log"
step b-holds-a-cut-off    pr_expect b b
step lun-sum-at-takeover  eval 'SUM_T1=$(lun_sum) && echo "  backing file sha256 $SUM_T1"'
step a-writes-fail        vm_wait "A's writes failing" 60 sh -c "[ \$(awk -v t=$TOOK '\$2 == \"fail\" && \$3 > t' $WRITES | wc -l) -ge 5 ]"
step no-a-write-succeeds  eval '[[ $(oks_after $((TOOK + 500))) == 0 ]]'
step a-keeps-trying       eval 'MARK=$(vm_now_ms) && vm_wait "more failed writes" 60 sh -c "[ \$(awk -v t=$MARK '"'"'\$2 == \"fail\" && \$3 > t'"'"' $WRITES | wc -l) -ge 5 ]"'
step lun-unchanged        eval '[[ $(lun_sum) == "$SUM_T1" ]]'
step writer-stopped       writer_stop
step lun-only-good-writes lun_holds_only_good_writes "$LUN_FILE"

step a-restarted          eval 'node_start a && node_ready a'
a_fenced() { ncsi a health $BLOCK_VOL "$A_BTARGET" && echo "  node-a: ${CSI_REPLY#ok }" | cut -c1-400 &&
             [[ $CSI_REPLY == *"INACCESSIBLE/Fenced"* ]]; }
step a-health-fenced      vm_wait "NodeGetVolumeHealth of node-a to say Fenced" 60 a_fenced
step a-fenced-logged      grep -F "volume $BLOCK_VOL is FENCED" "$VM_RESULTS/plugin-a.log"
step a-unpublish-block    ncsi a unpublish $BLOCK_VOL "$A_BTARGET"
step a-unstage-block      ncsi a unstage $BLOCK_VOL "$A_BSTAGING"
step b-untouched          eval 'pr_expect b b && node_has_nothing a'
step b-unstage-block      ncsi b unstage $BLOCK_VOL "$B_BSTAGING"
step nothing-reserved     pr_expect none

# A fenced volume gains a path after the stage, through the repair loop (multipathd for this part alone).
A_MSTAGING=$(node_block_staging a $MP_VOL); A_MTARGET=$(node_block_target a $MP_VOL)
step mp-part-begins       eval 'MP_BEGAN=$(vm_now_ms)'
step portal-2-added       mkdir "$TPG/np/$PORTAL_2"
step multipathd-start     mp_start
step a-stage-mp           ncsi a stagex $MP_VOL "$A_MSTAGING" block $(mp_ctx)
step mp-map-queues        mp_queue_set
step a-publish-mp         ncsi a publishx $MP_VOL "$A_MSTAGING" "$A_MTARGET" block
step mp-two-paths         eval 'mp_two_active && pr_show'
step a-writer-mp          writer_start "$A_MTARGET"
step portal-2-logged-out  a_session_2_out
step a-path-repaired      a_path_repaired
step new-nexus-registered new_nexus_registered
step registration-timeline registration_timeline
step mp-writes-go-on      eval 'MARK=$(vm_now_ms) && vm_wait "writes after the repair" 90 sh -c "[ \$(awk -v t=$MARK '"'"'\$2 == \"ok\" && \$3 > t'"'"' $WRITES | wc -l) -ge 5 ]"'
# Every session gone: the repair reads the reservation through a new session's own disk.
step mp-all-begins        eval 'MP_ALL_BEGAN=$(vm_now_ms)'
step mp-data-written      mp_data_written
step all-sessions-out     a_all_sessions_out
step all-paths-repaired   a_all_paths_repaired
step all-nexuses-registered all_nexuses_registered
step all-registration-timeline all_registration_timeline
step all-writes-go-on     eval 'MARK=$(vm_now_ms) && vm_wait "writes after the repair of every session" 90 sh -c "[ \$(awk -v t=$MARK '"'"'\$2 == \"ok\" && \$3 > t'"'"' $WRITES | wc -l) -ge 5 ]"'
step mp-data-reads-back   mp_data_reads_back
step mp-all-cost          eval 'echo "  every session gone and back: $(( $(vm_now_ms) - MP_ALL_BEGAN )) ms"'
step mp-writer-stopped    writer_stop
step mp-no-write-failed   eval 'echo "  $(grep -c " ok " $WRITES) writes, $(grep -c " fail " $WRITES) failed"; [[ $(grep -c " fail " $WRITES) == 0 ]] || { grep " fail " $WRITES | head -n 5 >&2; false; }'
step mp-hold-closed       mp_hold_closed
step a-unpublish-mp       ncsi a unpublish $MP_VOL "$A_MTARGET"
step a-unstage-mp         ncsi a unstage $MP_VOL "$A_MSTAGING"
step mp-released          eval 'pr_show; udevadm settle --timeout=30; [[ -z $(mp_map) ]] && node_has_nothing a'
step multipathd-stop      mp_stop
step portal-2-removed     rmdir "$TPG/np/$PORTAL_2"
step mp-part-cost         eval 'echo "  the part took $(( $(vm_now_ms) - MP_BEGAN )) ms"'

step plugins-stop         eval 'node_stop a && node_stop b'
step node-clean           eval 'udevadm settle --timeout=30; vm_leftovers'
step no-staging-records   eval '[[ -z $(ls -A ${NODE_DIR[a]}/state/volumes ${NODE_DIR[b]}/state/volumes 2>/dev/null | grep -v :) ]]'
step target-down          lio_delete
step daemons-down         eval 'iscsiadm -k 0 >/dev/null 2>&1; udevadm control --exit; vm_wait "iscsid and udevd to exit" 60 sh -c "! pidof iscsid systemd-udevd >/dev/null"'
echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
