# shellcheck shell=bash
# Shared by the scenarios that drive the plugin's OWN iscsi transport (iscsi-*.sh): unlike smoke.sh,
# nothing here logs in, scans or builds a map by hand. The guest only plays the array (tgtd LUNs) and
# runs the daemons a node has (udevd, iscsid, multipathd); the plugin does the rest from the volume
# context it is given, and the scenarios check what it did to the node.
#
# A scenario runs alone (`run-guest.sh guest/iscsi-fs.sh`: it starts and stops the SAN itself) or in a
# suite (suite.sh: several scenarios in one boot, the SAN started once). Either way it gets its own
# plugin process, socket, kubelet root, state directory and results directory ($VM_RESULTS), and it
# must leave the node clean: no SCSI disk, dm device, iSCSI session, node record, or mount.
#
# What the plugin runs is recorded: iscsiadm, multipath, multipathd and dmsetup are shadowed by small
# wrappers in /usr/local/sbin (first on the plugin's fixed search path, and only in the guest's overlay)
# that append "time parent[pid] tool args... -> exit status" to $BN_COMMAND_LOG before passing on the
# real tool's status. The plugin's part is copied into $VM_RESULTS/commands.log.

HERE=${HERE:-$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")}
source "$HERE/lib.sh"
source "$HERE/jvm.sh"

# The guest's devtmpfs has no /dev/fd (udev/systemd would make it), and bash's process substitution
# needs it: "<(...)" fails with "/dev/fd/62: No such file or directory" without it.
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd

REPO=${VM_REPO:-$(cd "$HERE/../../.." && pwd)}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
JAVA=$JAVA_HOME/bin/java
PLUGIN_JAR=${GUEST_PLUGIN_JAR:-$REPO/java/target/blocknode.jar}
CLIENT_JAR=${GUEST_CLIENT_JAR:-${VM_WORK:-$REPO/test-e2e/target/vm}/guest-client.jar}
PLUGIN_JAVA_OPTS=("${VM_JAVA_OPTS[@]}")
CLIENT_JAVA_OPTS=("${VM_JAVA_OPTS[@]}")
[[ -f ${GUEST_PLUGIN_AOT:-} ]] && PLUGIN_JAVA_OPTS+=("-XX:AOTCache=$GUEST_PLUGIN_AOT")
[[ -f ${GUEST_CLIENT_AOT:-} ]] && CLIENT_JAVA_OPTS+=("-XX:AOTCache=$GUEST_CLIENT_AOT")

BN_SCENARIO=${BN_SCENARIO:-$(basename "$0" .sh)}
BN_P=/tmp/bn-$BN_SCENARIO                 # socket, kubelet root, state dir: the guest's overlay
SOCKET=$BN_P/csi.sock
KUBELET=$BN_P/kubelet
STATE=$BN_P/state
DRIVER=block.csi.blocknode.dev
PORTAL1=${VM_PORTALS[0]}:$VM_ISCSI_PORT
PORTAL2=${VM_PORTALS[1]}:$VM_ISCSI_PORT
BN_COMMAND_LOG=/run/bn-commands.log
BN_METRICS=127.0.0.1:9810                 # the plugin's Prometheus endpoint (phase timings)
BN_SHIMMED=(iscsiadm multipath multipathd dmsetup)

PLUGIN_PID=""
CLIENT_PID=""
BN_OWN_SAN=no
BN_STEPS_OK=0
BN_STARTED=0
BN_COMMANDS_FROM=0
CSI_REPLY=""
CSI_MS=0

# Paths kubelet would use. A filesystem volume: staging dir and a pod's mount dir; a block volume:
# kubelet's volumeDevices staging dir and a per-pod file that the plugin bind-mounts the device on.
staging_of() { echo "$KUBELET/plugins/kubernetes.io/csi/$DRIVER/$1/globalmount"; }
target_of() { echo "$KUBELET/pods/${2:-pod-1}/volumes/kubernetes.io~csi/$1/mount"; }
block_staging_of() { echo "$KUBELET/plugins/kubernetes.io/csi/volumeDevices/staging/$1"; }
block_target_of() { echo "$KUBELET/plugins/kubernetes.io/csi/volumeDevices/publish/$1/${2:-pod-1}"; }

# ------------------------------------------------------------------------------------------- array

# bn_naa TID LUN: the NAA identifier tgtd reports for a LUN (measured: target 1, LUN 2 is
# naa.60000000000000000e00000000010002), and bn_wwid TID LUN its multipath form ("3" + the NAA).
bn_naa() { printf 'naa.60000000000000000e000000%04x%04x' "$1" "$2"; }
bn_wwid() { printf '360000000000000000e000000%04x%04x' "$1" "$2"; }

bn_target_delete() { tgtadm --lld iscsi --mode target --op delete --force --tid "$1" >/dev/null 2>&1 || true; }

# bn_lun_file TID LUN: the backing file of a LUN (vm_target_create's naming).
bn_lun_file() { echo "$VM_LUN_DIR/t$1-lun$2.img"; }

# grow_lun LUN MB [MOUNT] (on target $TID): the LUN's backing file grows by MB; tgtd reads a LUN's size only when the
# LUN is added, so it is deleted and added again over the grown file (same number, same WWID), retried while tgtd
# says the LUN is busy. The node is not told: NodeExpandVolume must find the new size itself. An array grows a LUN in
# place; here it is missing for a moment, and a write that meets it then fails on every path ("Logical unit not
# supported" is a target error dm-multipath passes up): ext4's own later writes (a journal checkpoint long after the
# test's fsync) aborted its journal under load. So the filesystem mounted at MOUNT is frozen around the swap.
grow_lun() {
  local lun=$1 mb=$2 mount=${3:-} file tries rc=1
  file=$(bn_lun_file $TID "$lun")
  truncate -s "+${mb}M" "$file" || return
  if [[ -n $mount ]]; then fsfreeze -f "$mount" || return; fi
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    tgtadm --lld iscsi --mode logicalunit --op delete --tid $TID --lun "$lun" 2>/dev/null && { rc=0; break; }
    vm_nap 0.5 # tgtd's "busy" ends with its own I/O; no event tells when
  done
  if (( rc != 0 )); then tgtadm --lld iscsi --mode logicalunit --op delete --tid $TID --lun "$lun" && rc=0; fi
  if (( rc == 0 )); then
    tgtadm --lld iscsi --mode logicalunit --op new --tid $TID --lun "$lun" --backing-store "$file" || rc=$?
  fi
  if [[ -n $mount ]]; then fsfreeze -u "$mount" || rc=$?; fi
  return $rc
}

# bn_iscsi_ctx IQN LUN [WWID]: the volume context of a LUN on both portals, as KEY=VALUE words.
bn_iscsi_ctx() {
  local ctx="targetPortal=$PORTAL1 portals=$PORTAL2 iqn=$1 lun=$2"
  [[ -n ${3:-} ]] && ctx+=" wwid=$3"
  echo "$ctx"
}

# ------------------------------------------------------------------------------------ command shims

bn_install_shims() {
  local tool real
  mkdir -p /usr/local/sbin
  touch "$BN_COMMAND_LOG"
  for tool in "${BN_SHIMMED[@]}"; do
    [[ -f /usr/local/sbin/$tool ]] && grep -q bn-commands "/usr/local/sbin/$tool" && continue
    real=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin type -P "$tool") || { echo "no $tool to wrap" >&2; return 1; }
    cat > "/usr/local/sbin/$tool" <<EOF
#!/bin/bash
# blocknode VM tier (guest overlay only): records who ran $tool, with which arguments and status.
[[ \$# -eq 0 ]] && exec $real
t0=\$EPOCHREALTIME
$real "\$@"
rc=\$?
printf -v line '%s %s[%s] %s' "\$t0" "\$(cat /proc/\$PPID/comm 2>/dev/null)" "\$PPID" "$tool"
printf -v args ' %q' "\$@"
printf '%s%s -> %s (%s ms)\n' "\$line" "\$args" "\$rc" "\$(( (\${EPOCHREALTIME/./} - \${t0/./}) / 1000 ))" >> /run/bn-commands.log
exit \$rc
EOF
    chmod 755 "/usr/local/sbin/$tool"
  done
  hash -r
}

# The plugin's commands since the scenario started (the JVM's children are named "java").
bn_plugin_commands() { tail -n +"$((BN_COMMANDS_FROM + 1))" "$BN_COMMAND_LOG" | grep -F ' java[' ; }

# ------------------------------------------------------------------------------- plugin and client

bn_plugin_launch() {
  rm -rf "$BN_P"
  mkdir -p "$BN_P"
  : > "$VM_RESULTS/plugin.log"; : > "$VM_RESULTS/client.log"
  bn_plugin_start
}

# bn_plugin_start: the plugin (and the client) on the scenario's existing kubelet root and state dir, as
# after a restart; its log is appended to plugin.log. BN_PLUGIN_ENV: extra environment for the plugin
# (KEY=VALUE words, e.g. BLOCKNODE_CRASH_AT=stage.attached: see the iscsi-crash scenario).
# GUEST_PLUGIN_ARGS: more plugin flags, split on blanks, e.g. "--device-wait=poll --device-poll-interval=1s"
BN_PLUGIN_ENV=()
bn_plugin_start() {
  local -a extra
  read -r -a extra <<<"${GUEST_PLUGIN_ARGS:-}"
  env ${BN_PLUGIN_ENV[@]+"${BN_PLUGIN_ENV[@]}"} "$JAVA" "${PLUGIN_JAVA_OPTS[@]}" -jar "$PLUGIN_JAR" \
    --endpoint "unix://$SOCKET" --kubelet-root "$KUBELET" --state-dir "$STATE" --log-format text \
    --metrics-address "$BN_METRICS" ${extra[@]+"${extra[@]}"} >> "$VM_RESULTS/plugin.log" 2>&1 &
  PLUGIN_PID=$!
  # "serve": one command a line on stdin (so secrets never travel in an argv), one reply a line.
  coproc CLIENT { exec "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$PLUGIN_JAR:$CLIENT_JAR" GuestClient "$SOCKET" serve \
                    2>> "$VM_RESULTS/client.log"; }
}

# GUEST_PLUGIN_START_S (default 120): how long the plugin may take to bind its socket, and then to answer Probe. A
# JVM without the boot's AOT cache (san-bench comparing two jars) took over 120 s to start at host load 24.
bn_plugin_ready() {
  local limit=${GUEST_PLUGIN_START_S:-120}
  vm_wait_alive "$PLUGIN_PID" "the plugin's socket" "$limit" test -S "$SOCKET" &&
    vm_wait_alive "$PLUGIN_PID" "the plugin to answer Probe" "$limit" csi probe
}

# csi COMMAND ARGS...: one call through the client. Sets CSI_REPLY (the whole reply) and CSI_MS (the
# call's duration as the client measured it); returns 0 only for "ok".
csi() {
  local reply
  CSI_REPLY=""; CSI_MS=0
  [[ -n ${CLIENT_PID:-} ]] || { echo "the CSI client is not running" >&2; return 1; }
  echo "$*" >&"${CLIENT[1]}" || return
  IFS= read -r -t "${GUEST_CSI_TIMEOUT:-240}" reply <&"${CLIENT[0]}" || { echo "no reply from the CSI client to: $1" >&2; return 1; }
  CSI_REPLY=$reply
  CSI_MS=$(awk '{print $2}' <<<"$reply")
  [[ $reply == ok* ]] || { echo "csi $1: $reply" >&2; return 1; }
}

# NodeGetVolumeHealth (kubelet 1.37+) of a volume, or NodeGetStorageHealth, must say EXPECTED: the conditions'
# "Status/Reason" words in order, or "healthy" when there is none (GuestClient health / storagehealth).
bn_health_says() { # volume publish-path expected
  csi health "$1" "$2" || return
  echo "  NodeGetVolumeHealth: ${CSI_REPLY#ok }"
  [[ $(bn_health_words) == "$3" ]] || { echo "expected $3" >&2; return 1; }
}
bn_storage_health_says() { # expected
  csi storagehealth || return
  echo "  NodeGetStorageHealth: ${CSI_REPLY#ok }"
  [[ $(bn_health_words) == "$1" ]] || { echo "expected $1" >&2; return 1; }
}
bn_health_words() { awk '{$1 = ""; $2 = ""; sub(/^ +/, ""); sub(/ *\|.*/, ""); print}' <<<"$CSI_REPLY"; }

# csi_fails CODE[|CODE...] COMMAND ARGS...: the call must fail with one of the gRPC codes. The
# description is in CSI_REPLY.
csi_fails() {
  local codes=$1; shift
  if csi "$@" 2>/dev/null; then
    echo "csi $1 succeeded, expected $codes" >&2; return 1
  fi
  local code
  code=$(awk '{print $3}' <<<"$CSI_REPLY"); code=${code%:}
  if [[ ! "|$codes|" == *"|$code|"* ]]; then
    echo "csi $1: expected $codes, got: $CSI_REPLY" >&2; return 1
  fi
  echo "  $1 refused as expected: ${CSI_REPLY#error }"
}

# bn_exited PID: the process is gone (bash reaps its children as they end, keeping their status for wait).
bn_exited() { ! kill -0 "$1" 2>/dev/null; }

# The client ends when its input closes; one that does not within 30 s is killed (a hang must fail the step,
# not the whole boot at the guest's limit).
bn_client_stop() {
  if [[ -n ${CLIENT_PID:-} ]]; then
    local fd=${CLIENT[1]} pid=$CLIENT_PID
    exec {fd}>&-
    vm_wait "the CSI client to exit" 30 bn_exited "$pid" || kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    CLIENT_PID=""
  fi
}

# SIGTERM, as kubelet's container runtime stops the plugin. A plugin still there after 60 s is hung: its
# threads are dumped into plugin.log (SIGQUIT) for the diagnosis, then it is killed and the step fails.
bn_plugin_stop() {
  bn_client_stop
  [[ -n $PLUGIN_PID ]] || return 0
  kill -TERM "$PLUGIN_PID" 2>/dev/null
  local rc=0 pid=$PLUGIN_PID
  if ! vm_wait "the plugin to exit after SIGTERM" 60 bn_exited "$pid"; then
    echo "the plugin did not stop within 60 s of SIGTERM; its threads are in plugin.log" >&2
    kill -QUIT "$pid" 2>/dev/null
    vm_wait "the plugin's thread dump" 10 grep -q 'Full thread dump' "$VM_RESULTS/plugin.log"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    PLUGIN_PID=""
    return 1
  fi
  wait "$pid" || rc=$?
  PLUGIN_PID=""
  [[ $rc == 0 || $rc == 143 ]] || { echo "the plugin exited $rc" >&2; return 1; }
}

# ----------------------------------------------------------------------------------------- checks

# Sessions of IQN (sysfs): prints how many.
bn_sessions_of() {
  local s n=0
  for s in /sys/class/iscsi_session/session*; do
    [[ -e $s ]] || continue
    [[ $(cat "$s/targetname" 2>/dev/null) == "$1" ]] && n=$((n + 1))
  done
  echo "$n"
}

# Node records of IQN: prints how many (one flat file or directory per portal).
bn_records_of() { find "/etc/iscsi/nodes/$1" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# bn_expect_sessions IQN N: exactly N sessions of IQN, as sysfs and iscsiadm both say.
bn_expect_sessions() {
  local iqn=$1 want=$2 have listed
  have=$(bn_sessions_of "$iqn")
  listed=$(iscsiadm -m session 2>/dev/null | grep -cF " $iqn " || true)
  [[ $have == "$want" && $listed == "$want" ]] ||
    { echo "sessions of $iqn: sysfs $have, iscsiadm $listed; expected $want" >&2; iscsiadm -m session 2>&1 >&2; return 1; }
}

# The map a staged volume's staging mount (or block device) is on: prints dm-N.
bn_dm_of_mount() {
  local source
  source=$(findmnt -rn -o SOURCE --mountpoint "$1") || return 1
  source=$(readlink -f "$source")
  [[ $source == /dev/dm-* ]] || { echo "$1 is mounted from $source, not from a dm device" >&2; return 1; }
  echo "${source#/dev/}"
}

# bn_expect_map DM WWID PATHS: dm-N is the multipath map of WWID with PATHS slaves, and each is a
# path of that LUN.
bn_expect_map() {
  local dm=$1 wwid=$2 want=$3 uuid slaves s
  uuid=$(cat "/sys/block/$dm/dm/uuid" 2>/dev/null)
  [[ $uuid == "mpath-$wwid" ]] || { echo "$dm is \"$uuid\", not mpath-$wwid" >&2; return 1; }
  slaves=$(ls "/sys/block/$dm/slaves")
  [[ $(wc -w <<<"$slaves") == "$want" ]] || { echo "$dm has slaves [$slaves], expected $want" >&2; return 1; }
  for s in $slaves; do
    [[ $(/lib/udev/scsi_id --whitelisted --device="/dev/$s") == "$wwid" ]] || { echo "slave $s of $dm is not $wwid" >&2; return 1; }
  done
  echo "  map $dm = mpath-$wwid over $(echo $slaves)"
}

# bn_expect_records IQN: a record per portal, manual startup and manual scan, made without discovery,
# and the short replacement timeout of a LUN used through a multipath map (15 s, not iscsid.conf's 120).
bn_expect_records() {
  local iqn=$1 f n=0
  for f in "/etc/iscsi/nodes/$iqn"/*; do
    [[ -e $f ]] || continue
    [[ -d $f ]] && f=$(find "$f" -type f | head -n 1)
    n=$((n + 1))
    grep -qx 'node.startup = manual' "$f" || { echo "$f: node.startup is not manual" >&2; return 1; }
    grep -qx 'node.session.scan = manual' "$f" || { echo "$f: node.session.scan is not manual" >&2; return 1; }
    [[ $(grep -c '^node.session.timeo.replacement_timeout = ' "$f") == 1 ]] &&
      grep -qx 'node.session.timeo.replacement_timeout = 15' "$f" ||
      { echo "$f: $(grep '^node.session.timeo.replacement_timeout' "$f" | tr '\n' ' '), expected one line = 15" >&2; return 1; }
  done
  ((n == 2)) || { echo "$n node records for $iqn, expected 2" >&2; return 1; }
  [[ -z $(ls -A /etc/iscsi/send_targets 2>/dev/null) ]] || { echo "discovery records exist (send_targets)" >&2; return 1; }
}

# SCSI devices of the node (H:C:T:L), sorted.
bn_scsi_devices() { ls /sys/class/scsi_device 2>/dev/null | sort; }

# The volume is gone from this node: no sessions or records of IQN, no mount under the plugin's dirs.
bn_target_released() {
  local iqn=$1
  udevadm settle --timeout=30
  bn_expect_sessions "$iqn" 0 || return
  [[ $(bn_records_of "$iqn") == 0 ]] || { echo "node records of $iqn left: $(ls "/etc/iscsi/nodes/$iqn")" >&2; return 1; }
}

# Everything the brief calls clean: no sd*/dm-*, no session, no node record, no mount under the
# plugin's directories, and no staging record left by the plugin.
bn_node_clean() {
  local left=0 out
  udevadm settle --timeout=30
  out=$(vm_leftovers) || { echo "$out" >&2; left=1; }
  out=$(iscsiadm -m session 2>&1) && { echo "iscsiadm -m session still lists: $out" >&2; left=1; }
  out=$(findmnt -rn -o TARGET | grep -F "$BN_P/") && { echo "still mounted: $out" >&2; left=1; }
  out=$(ls -A "$STATE/volumes" 2>/dev/null) && [[ -n $out ]] && { echo "staging records left: $out" >&2; left=1; }
  return $left
}

# ------------------------------------------------------------------------------------------- data

# bn_write_file FILE MIB: random data, fsynced; prints its sha256.
bn_write_file() {
  dd if=/dev/urandom of="$1" bs=1M count="$2" conv=fsync status=none && sha256sum < "$1" | cut -d' ' -f1
}

# bn_verify_file FILE SHA: after dropping the guest's caches, the file reads back with that sum.
bn_verify_file() {
  local now
  sync && echo 3 > /proc/sys/vm/drop_caches || return
  now=$(sha256sum < "$1" | cut -d' ' -f1)
  [[ $now == "$2" ]] || { echo "checksum of $1 changed: wrote $2, read $now" >&2; return 1; }
}

# bn_write_raw DEVICE: 4 MiB of random data (kept in $BN_RAW) written to DEVICE with O_DIRECT.
BN_RAW=/tmp/bn-raw
bn_write_raw() {
  dd if=/dev/urandom of="$BN_RAW" bs=1M count=4 status=none &&
    dd if="$BN_RAW" of="$1" bs=1M oflag=direct conv=fsync,notrunc status=none
}

# bn_read_raw DEVICE ARRAY_SIDE: what bn_write_raw wrote reads back through DEVICE (O_DIRECT) and from
# ARRAY_SIDE (the LUN's backing file, the namespace's loop device).
bn_read_raw() {
  local want through array
  want=$(sha256sum < "$BN_RAW" | cut -d' ' -f1)
  through=$(dd if="$1" bs=1M count=4 iflag=direct status=none | sha256sum | cut -d' ' -f1)
  array=$(dd if="$2" bs=1M count=4 status=none | sha256sum | cut -d' ' -f1)
  [[ $through == "$want" && $array == "$want" ]] ||
    { echo "raw data: wrote $want, read $through through the device, $array on the array" >&2; return 1; }
}

# ------------------------------------------------------------------------------- a writer under a cut

# bn_writer_start FILE: a background writer, 4 KiB + fsync at a time into FILE, until bn_writer_stop. The
# time of each good write goes to $BN_PROGRESS (one line each), each failure to $BN_WRITER_ERRORS.
BN_PROGRESS=/tmp/bn-writer-progress
BN_WRITER_ERRORS=/tmp/bn-writer-errors
BN_WRITER_STOP=/tmp/bn-writer-stop
BN_WRITER=""
bn_writer() {
  local i=0
  : > "$BN_PROGRESS"; : > "$BN_WRITER_ERRORS"
  until [[ -e $BN_WRITER_STOP ]]; do
    if dd if=/dev/urandom of="$1" bs=4k count=1 seek=$((i % 1024)) conv=fsync,notrunc status=none 2>>"$BN_WRITER_ERRORS"; then
      echo "$(vm_now_ms)" >> "$BN_PROGRESS"
    else
      echo "write $i failed at $(vm_now_ms)" >> "$BN_WRITER_ERRORS"
    fi
    i=$((i + 1))
  done
}
bn_writer_start() {
  rm -f "$BN_WRITER_STOP"
  bn_writer "$1" & BN_WRITER=$!
  vm_wait "the writer's first writes" 30 sh -c "[ \$(wc -l < $BN_PROGRESS) -ge 3 ]"
}
bn_writes_since() { awk -v t="$1" '$1 > t' "$BN_PROGRESS" | wc -l; }
# bn_io_goes_on CUT_MS WHAT: 10 more good writes from now on; prints how many since the cut.
bn_io_goes_on() {
  local mark
  mark=$(vm_now_ms)
  vm_wait "writes after $2" 60 sh -c "[ \$(awk -v t=$mark '\$1 > t' $BN_PROGRESS | wc -l) -ge 10 ]" || return
  echo "  $(bn_writes_since "$1") writes since the cut, $(bn_writes_since "$mark") since $2"
}
# Stops the writer; fails if any write failed. Prints the longest gap between two good writes.
bn_writer_stop() {
  touch "$BN_WRITER_STOP"; wait "$BN_WRITER"; BN_WRITER=""
  local longest
  longest=$(awk 'NR > 1 && $1 - prev > max {max = $1 - prev} {prev = $1} END {print max + 0}' "$BN_PROGRESS")
  echo "  writer: $(wc -l < "$BN_PROGRESS") writes, longest gap between two $longest ms, errors: $(grep -c . "$BN_WRITER_ERRORS")"
  [[ ! -s $BN_WRITER_ERRORS ]] || { echo "the writer saw errors:" >&2; head -n 5 "$BN_WRITER_ERRORS" >&2; return 1; }
}
# On a failure: the writer gone before anything is torn down.
bn_writer_kill() {
  touch "$BN_WRITER_STOP"
  [[ -n $BN_WRITER ]] && { kill "$BN_WRITER" 2>/dev/null; wait "$BN_WRITER" 2>/dev/null; BN_WRITER=""; }
  true
}

# bn_paths_gauge VOLUME STATE N: the plugin's blocknode_volume_paths{volume_id=VOLUME,state=STATE} is N. Up to 30 s
# for the scrape: in the nvme-tcp boot it is the plugin's first, and at host load 12-14 it outlasted 10 s (the gauge
# read "absent") in 3 boots of 5.
bn_paths_gauge() {
  local value
  value=$(curl -sf --max-time 30 "http://$BN_METRICS/metrics" | awk -v v="volume_id=\"$1\"" \
    -v s="state=\"$2\"" 'index($0, "blocknode_volume_paths{") == 1 && index($0, v) && index($0, s) {print $NF}')
  echo "  blocknode_volume_paths{volume_id=\"$1\",state=\"$2\"} ${value:-absent}"
  [[ -n $value ]] && awk -v a="$value" -v b="$3" 'BEGIN {exit !(a + 0 == b + 0)}' ||
    { echo "expected $3" >&2; return 1; }
}

# bn_repairs_counted TRANSPORT KIND: the plugin's blocknode_path_repairs_total{transport,kind,outcome="restored"}
# is at least 1.
bn_repairs_counted() {
  local value
  value=$(curl -sf --max-time 10 "http://$BN_METRICS/metrics" | awk -v t="transport=\"$1\"" -v k="kind=\"$2\"" \
    'index($0, "blocknode_path_repairs_total{") == 1 && index($0, t) && index($0, k) && /outcome="restored"/ {print $NF}')
  echo "  blocknode_path_repairs_total{transport=\"$1\",kind=\"$2\",outcome=\"restored\"} ${value:-absent}"
  [[ -n $value ]] && awk -v a="$value" 'BEGIN {exit !(a >= 1)}' || { echo "expected at least 1" >&2; return 1; }
}

# bn_sweeps_counted TRANSPORT KIND MIN: the plugin's blocknode_path_sweeps_total{transport,kind,outcome="removed"}
# is at least MIN.
bn_sweeps_counted() {
  local value
  value=$(curl -sf --max-time 10 "http://$BN_METRICS/metrics" | awk -v t="transport=\"$1\"" -v k="kind=\"$2\"" \
    'index($0, "blocknode_path_sweeps_total{") == 1 && index($0, t) && index($0, k) && /outcome="removed"/ {print $NF}')
  echo "  blocknode_path_sweeps_total{transport=\"$1\",kind=\"$2\",outcome=\"removed\"} ${value:-absent}"
  [[ -n $value ]] && awk -v a="$value" -v m="$3" 'BEGIN {exit !(a >= m)}' || { echo "expected at least $3" >&2; return 1; }
}

# ------------------------------------------------------------------------------ timing from the logs

# Epoch ms of an ISO time stamp ("2026-11-22T03:49:42.899Z").
bn_iso_ms() { date -d "$1" +%s%3N; }

# bn_attach_timeline VOLUME: from the plugin's log and its commands, the attach of VOLUME's last
# NodeStageVolume: when the call began, when its last login finished, when the plugin first looked at
# the disks (its first "multipathd show daemon" after the call began: LunAttacher asks right after
# the disks appeared and their WWIDs were verified), and when it logged the map. Prints one line.
#
# The plugin does not log its scan or the moment the disks appear; this is the closest the log and
# the command record allow (see the README's "What the plugin's log lacks").
bn_attach_timeline() {
  local volume=$1 log=$VM_RESULTS/plugin.log map_line end_line dur start_ms login_ms="" disks_ms="" map_ms
  map_line=$(grep -F "volume $volume: LUN" "$log" | grep -F "through multipath map" | tail -n 1)
  [[ -n $map_line ]] || { echo "  timeline $volume: no \"through multipath map\" line in the plugin log"; return 0; }
  map_ms=$(bn_iso_ms "${map_line%% *}")
  # The call that logged the map: by its tag ("[NodeStageVolume #7 vol-a]") where the plugin tags its
  # lines, else the first NodeStageVolume that ended after the map.
  local tag
  tag=$(grep -o '\[NodeStageVolume #[0-9]* [^]]*\]' <<<"$map_line" | head -n 1)
  if [[ -n $tag ]]; then
    end_line=$(grep -F "$tag" "$log" | grep -E 'NodeStageVolume #[0-9]+ OK in' | head -n 1)
  else
    end_line=$(awk -v t="${map_line%% *}" '$1 >= t && /NodeStageVolume #[0-9]+ OK in/ {print; exit}' "$log")
  fi
  dur=$(sed -n 's/.* OK in \([0-9]*\) us.*/\1/p' <<<"$end_line")
  [[ -n $dur ]] || { echo "  timeline $volume: no NodeStageVolume OK line after the map"; return 0; }
  start_ms=$(( $(bn_iso_ms "${end_line%% *}") - dur / 1000 ))
  local t
  while read -r t; do
    t=$(bn_iso_ms "$t")
    ((t >= start_ms && t <= map_ms)) && login_ms=$t
  done < <(grep -F "logged in to" "$log" | awk '{print $1}')
  while read -r t; do
    t=${t/./}; t=$((t / 1000))
    if ((t >= start_ms && t <= map_ms)) && [[ -z $disks_ms ]]; then disks_ms=$t; fi
  done < <(bn_plugin_commands | grep -F 'multipathd show daemon' | awk '{print $1}')
  local from=$start_ms what="call start"
  [[ -n $login_ms ]] && { from=$login_ms; what="last login"; }
  printf '  timeline %s: call start +0 ms' "$volume"
  [[ -n $login_ms ]] && printf ', logins done +%d ms' $((login_ms - start_ms))
  [[ -n $disks_ms ]] && printf ', disks seen +%d ms' $((disks_ms - start_ms))
  printf ', map ready +%d ms; scan-to-ready (from %s) %d ms' $((map_ms - start_ms)) "$what" $((map_ms - from))
  [[ -n $disks_ms ]] && printf ' (scan-to-disks %d ms, disks-to-map %d ms)' $((disks_ms - from)) $((map_ms - disks_ms))
  printf '\n'
}

# The plugin's own phase timings (blocknode_phase_seconds{phase,outcome}: login, scan, device_wait,
# mkfs, mount, flush, release, logout...), scraped from its metrics endpoint into metrics.txt and
# summed up, one line per phase. device_wait is LunAttacher.attach: from the end of the targeted scans
# until the disks are there, verified, and the multipath map holds them: the scan-to-ready latency.
bn_phase_report() {
  curl -sf --max-time 10 "http://$BN_METRICS/metrics" > "$VM_RESULTS/metrics.txt" 2>/dev/null ||
    { echo "  (no metrics from the plugin)"; return 0; }
  awk '
    /^blocknode_phase_seconds_(sum|count|max)\{/ {
      match($0, /phase="[^"]*"/); phase = substr($0, RSTART + 7, RLENGTH - 8)
      match($0, /outcome="[^"]*"/); outcome = substr($0, RSTART + 9, RLENGTH - 10)
      key = phase (outcome == "ok" ? "" : "(" outcome ")")
      if ($0 ~ /_sum\{/) sum[key] = $NF
      else if ($0 ~ /_count\{/) count[key] = $NF
      else max[key] = $NF
    }
    END {
      for (k in count) if (count[k] > 0)
        printf "  phase %-22s %3d x, mean %6.0f ms, max %6.0f ms\n", k, count[k], 1000 * sum[k] / count[k], 1000 * max[k]
    }' "$VM_RESULTS/metrics.txt" | sort
}

# --------------------------------------------------------------------------------------- framework

bn_diagnose() {
  vm_diagnose
  echo "----- iscsiadm -m node / records"
  iscsiadm -m node 2>&1 | head -n 20
  find /etc/iscsi/nodes -maxdepth 2 2>/dev/null | head -n 20
  echo "----- plugin log (tail)"; tail -n 30 "$VM_RESULTS/plugin.log" 2>/dev/null
  echo "----- the plugin's commands (tail)"; bn_plugin_commands | tail -n 30
  echo "-----"
}

# A failed step ends the scenario: diagnose, take down what can be taken down, exit 1.
bn_fail() {
  # A scenario's own undo (a background writer to stop, a route to delete...), when it has one.
  declare -F bn_on_fail >/dev/null && bn_on_fail
  bn_diagnose
  bn_plugin_stop 2>/dev/null
  bn_save_commands
  vm_initiator_teardown >/dev/null 2>&1
  [[ -n ${TID:-} ]] && bn_target_delete "$TID"
  [[ $BN_OWN_SAN == yes ]] && vm_san_stop >/dev/null 2>&1
  echo "$BN_SCENARIO: FAILED at step $1 after $BN_STEPS_OK steps ($(( $(vm_now_ms) - BN_STARTED )) ms)"
  exit 1
}

step() {
  if vm_step "$@"; then
    BN_STEPS_OK=$((BN_STEPS_OK + 1))
  else
    local known
    if known=$(bn_known_bug); then bn_xfail_rest "$1" "$known"; fi
    bn_fail "$1"
  fi
}

# Known plugin bugs that stop a scenario at its first NodeStageVolume, told by the plugin's reply.
# Each is in the README's "Known plugin bugs", with its diagnosis and the proposed fix. A bug listed
# here turns the scenario into an expected failure (XFAIL) instead of a failure; nothing else does.
# (B1, B2 and B3 are fixed; none is listed now.)
bn_known_bug() {
  case $CSI_REPLY in
    *) return 1 ;;
  esac
}

# The scenario cannot go on past a known bug: record it, take down by hand what the plugin left, check
# that the node is then clean, and end the scenario as an expected failure (exit 0; e2e.sh reports XFAIL).
bn_xfail_rest() {
  declare -F bn_on_fail >/dev/null && bn_on_fail
  echo "  XFAIL at step $1: known plugin bug $2"
  echo "  (plugin: ${CSI_REPLY:0:300})"
  echo "XFAIL-SCENARIO at step $1: $2" >> "$VM_RESULTS/xfail"
  bn_plugin_stop 2>/dev/null
  bn_save_commands
  vm_initiator_teardown >/dev/null 2>&1
  [[ -n ${TID:-} ]] && bn_target_delete "$TID"
  vm_step node-clean-by-hand bn_node_clean || { bn_diagnose; exit 1; }
  [[ $BN_OWN_SAN == yes ]] && vm_san_stop >/dev/null 2>&1
  echo "$BN_SCENARIO: EXPECTED FAILURE (known plugin bug) at step $1 after $BN_STEPS_OK steps ($(( $(vm_now_ms) - BN_STARTED )) ms)"
  exit 0
}

# xstep BUG NAME COMMAND...: a step that a known plugin bug makes fail (each is listed, with its
# diagnosis, in the README's "Known plugin bugs"). Failing, it prints XFAIL, records it in
# $VM_RESULTS/xfail and the scenario goes on; passing, it prints XPASS: the bug is fixed, and the
# step should become a plain one. What the bug left behind is the scenario's to take down
# (bn_take_down_leftovers), where it knows that nothing else is staged.
xstep() {
  local bug=$1 name=$2; shift 2
  if vm_step "$name" "$@"; then
    echo "  XPASS $name: the known bug ($bug) no longer shows; make this a plain step"
    echo "XPASS $name: $bug" >> "$VM_RESULTS/xfail"
  else
    echo "  XFAIL $name: known plugin bug: $bug"
    echo "XFAIL $name: $bug" >> "$VM_RESULTS/xfail"
  fi
  BN_STEPS_OK=$((BN_STEPS_OK + 1))
}

# After an XFAIL of leftovers: takes down by hand whatever is on the initiator side (only where no
# volume is staged), and says what it was.
bn_take_down_leftovers() {
  local left
  left=$(vm_leftovers) && return 0
  echo "  taking down by hand: $(echo $left)"
  vm_initiator_teardown >/dev/null
}

bn_save_commands() { bn_plugin_commands > "$VM_RESULTS/commands.log" 2>/dev/null || true; }

# bn_begin: the scenario's first step. Starts the plugin (its JVM start overlaps the SAN's), the SAN
# when no suite started it, and the command record.
bn_begin() {
  BN_STARTED=$(vm_now_ms)
  mkdir -p "$VM_RESULTS"
  rm -f "$VM_RESULTS/xfail" "$VM_RESULTS/secret-canaries"
  vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs"
  step plugin-launch bn_plugin_launch
  if ! { pidof tgtd && pidof iscsid && pidof multipathd && pidof systemd-udevd; } >/dev/null; then
    BN_OWN_SAN=yes
    step san-start vm_san_start
  fi
  step install-shims bn_install_shims
  BN_COMMANDS_FROM=$(wc -l < "$BN_COMMAND_LOG")
}

# bn_end: stops the plugin, checks the node, stops the SAN if this scenario started it.
bn_end() {
  bn_phase_report
  step plugin-stop bn_plugin_stop
  bn_save_commands
  step node-clean bn_node_clean
  [[ $BN_OWN_SAN == yes ]] && step san-stop vm_san_stop
  local known=""
  [[ -s $VM_RESULTS/xfail ]] && known=" ($(grep -c '^XFAIL' "$VM_RESULTS/xfail") expected to fail: known plugin bugs)"
  echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms$known"
}

# Secrets a scenario must never leak (CHAP passwords, LUKS passphrases): the scenario sets BN_SECRETS to
# this run's random values (never printed) before it starts the scan. Bash builtins only below: no grep or
# cat carries a secret in its own argv.
BN_SECRETS=()
BN_ARGV_SCANNER=""
BN_ARGV_HITS=/tmp/bn-argv-hits
BN_ARGV_SCANS=/tmp/bn-argv-scans

# bn_has_secret TEXT: TEXT holds one of BN_SECRETS.
bn_has_secret() {
  local s
  for s in "${BN_SECRETS[@]}"; do [[ $1 == *"$s"* ]] && return 0; done
  return 1
}

# Every process's argv until stopped; a process whose argv holds a secret is written to the hits file with
# the secrets masked.
bn_scan_argv() {
  local f args n=0 words s
  : > "$BN_ARGV_HITS"
  while :; do
    for f in /proc/[0-9]*/cmdline; do
      mapfile -d '' -t words 2>/dev/null < "$f" || continue # a process gone since the glob: no complaint
      args="${words[*]}"
      if bn_has_secret "$args"; then
        for s in "${BN_SECRETS[@]}"; do args=${args//$s/<secret>}; done
        echo "${f%/cmdline}: $args" >> "$BN_ARGV_HITS"
      fi
    done
    n=$((n + 1)); echo "$n" > "$BN_ARGV_SCANS"
    # A pause between passes, or the scan takes a whole vCPU of two and doubles a stage's time. Any command
    # the plugin runs lives longer than this (cryptsetup's key derivation alone), and the command record
    # has every argv anyway.
    sleep 0.05
  done
}
# No secrets set would make every check below pass without looking: refused.
bn_secrets_set() { ((${#BN_SECRETS[@]} > 0)) || { echo "BN_SECRETS is empty: nothing to look for" >&2; return 1; }; }
bn_argv_scan_start() { bn_secrets_set || return; bn_scan_argv & BN_ARGV_SCANNER=$!; }
# bn_argv_scan_abort: stops a scan a failed step left running (bn_on_fail), judging nothing.
bn_argv_scan_abort() {
  [[ -n $BN_ARGV_SCANNER ]] || return 0
  kill "$BN_ARGV_SCANNER" 2>/dev/null; wait "$BN_ARGV_SCANNER" 2>/dev/null; BN_ARGV_SCANNER=""
}
bn_argv_scan_stop() {
  [[ -n $BN_ARGV_SCANNER ]] || return 0
  bn_argv_scan_abort
  echo "  argv scans of every process: $(cat "$BN_ARGV_SCANS" 2>/dev/null || echo 0)"
  [[ ! -s $BN_ARGV_HITS ]] || { echo "a secret is in a process's argv:" >&2; sed 's/^/    /' "$BN_ARGV_HITS" >&2; return 1; }
}

# bn_secrets_in_no_file FILE...: no line of these files (those that exist) holds a secret.
bn_secrets_in_no_file() {
  local file line
  bn_secrets_set || return
  for file in "$@"; do
    [[ -f $file ]] || continue
    while IFS= read -r line; do
      bn_has_secret "$line" && { echo "a secret is in $file" >&2; return 1; }
    done < "$file"
  done
  return 0
}
