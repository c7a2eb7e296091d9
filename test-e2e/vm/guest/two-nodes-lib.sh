# shellcheck shell=bash
# Shared by the scenarios that run two plugin instances in one guest, node A and node B on one volume (fencing.sh
# over iSCSI, nvme-fencing.sh over NVMe/TCP): each node has its own --node-id (node-a, node-b), state dir, kubelet
# root, socket, metrics port and GuestClient on a FIFO pair, and node A can run a writer on a raw block volume whose
# every write is recorded, for the takeover checks. The scenario sources its transport's lib first (iscsi-lib.sh,
# directly or through nvme-lib.sh: the JVM settings, jars and step framework) and then sets, before node_start:
#   NODE_DIR[a], NODE_DIR[b]    each node's directory (socket, kubelet root, state dir, the client's FIFOs)
#   METRICS[a], METRICS[b]      each plugin's --metrics-address
#   NODE_PLUGIN_ARGS            the plugin flags both nodes get besides those (an array: fencing times, intervals)
# node_ready N sets TAG[N], the reservation key tag node N's plugin logs at start.
declare -A NODE_DIR NODE_PID CLIENT_IN CLIENT_OUT CLIENT_PID METRICS TAG
NODE_PLUGIN_ARGS=()

# Kubelet's paths on node N for volume V: staging and target, of a filesystem and of a raw block volume.
node_staging() { echo "${NODE_DIR[$1]}/kubelet/plugins/kubernetes.io/csi/$DRIVER/$2/globalmount"; }
node_block_staging() { echo "${NODE_DIR[$1]}/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/$2"; }
node_target() { echo "${NODE_DIR[$1]}/kubelet/pods/pod-$1/volumes/kubernetes.io~csi/$2/mount"; }
node_block_target() { echo "${NODE_DIR[$1]}/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/$2/pod-$1"; }

# The other node's client FIFOs, closed in a process started now: a client sees the end of its input only when
# every copy of the FIFO's write end is closed.
close_client_fds() {
  local fd
  for fd in "${CLIENT_IN[@]}" "${CLIENT_OUT[@]}"; do eval "exec $fd>&-"; done
}

# node_start N: node N's plugin (appending to plugin-N.log) and its client, each on its own FIFO pair.
node_start() {
  local n=$1 dir=${NODE_DIR[$1]} fd
  mkdir -p "$dir"
  ( close_client_fds
    exec "$JAVA" "${PLUGIN_JAVA_OPTS[@]}" -jar "$PLUGIN_JAR" --endpoint "unix://$dir/csi.sock" --node-id "node-$n" \
      --kubelet-root "$dir/kubelet" --state-dir "$dir/state" --log-format text --metrics-address "${METRICS[$n]}" \
      "${NODE_PLUGIN_ARGS[@]}" ) >> "$VM_RESULTS/plugin-$n.log" 2>&1 &
  NODE_PID[$n]=$!
  rm -f "$dir/in" "$dir/out"; mkfifo "$dir/in" "$dir/out"
  ( close_client_fds
    exec "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$PLUGIN_JAR:$CLIENT_JAR" GuestClient "$dir/csi.sock" serve ) \
    < "$dir/in" > "$dir/out" 2>> "$VM_RESULTS/client-$n.log" &
  CLIENT_PID[$n]=$!
  exec {fd}>"$dir/in"; CLIENT_IN[$n]=$fd
  exec {fd}<"$dir/out"; CLIENT_OUT[$n]=$fd
}

# node_ready N: node N's socket bound and Probe answered, each within GUEST_PLUGIN_START_S (default 120) s: a
# restart's JVM and client beside a loaded host took longer (nvme-fencing, host load 16).
node_ready() {
  local n=$1 limit=${GUEST_PLUGIN_START_S:-120}
  vm_wait_alive "${NODE_PID[$n]}" "node-$n's socket" "$limit" test -S "${NODE_DIR[$n]}/csi.sock" &&
    vm_wait_alive "${NODE_PID[$n]}" "node-$n to answer Probe" "$limit" ncsi "$n" probe &&
    TAG[$n]=$(sed -n 's/.*reservation key tag is \([0-9a-f]\{12\}\).*/\1/p' "$VM_RESULTS/plugin-$n.log" | tail -n 1) &&
    [[ -n ${TAG[$n]} ]] && echo "  node-$n's key tag: ${TAG[$n]}"
}

node_client_stop() {
  local n=$1 fd
  [[ -n ${CLIENT_PID[$n]:-} ]] || return 0
  fd=${CLIENT_IN[$n]}; exec {fd}>&-
  fd=${CLIENT_OUT[$n]}; exec {fd}<&-
  unset "CLIENT_IN[$n]" "CLIENT_OUT[$n]"
  # A background job started meanwhile (the writer) may hold a copy of the FIFO: no EOF to wait for.
  kill "${CLIENT_PID[$n]}" 2>/dev/null
  wait "${CLIENT_PID[$n]}" 2>/dev/null
  CLIENT_PID[$n]=""
}

node_stop() {
  local n=$1 rc=0
  node_client_stop "$n"
  [[ -n ${NODE_PID[$n]:-} ]] || return 0
  kill -TERM "${NODE_PID[$n]}" 2>/dev/null
  wait "${NODE_PID[$n]}" || rc=$?
  NODE_PID[$n]=""
  [[ $rc == 0 || $rc == 143 ]] || { echo "node-$n's plugin exited $rc" >&2; return 1; }
}

# node_kill N: kill -9, as a crashed plugin: no shutdown, the mounts and devices stay.
node_kill() {
  local n=$1
  node_client_stop "$n"
  kill -KILL "${NODE_PID[$n]}" && wait "${NODE_PID[$n]}" 2>/dev/null
  NODE_PID[$n]=""
  true
}

# ncsi N COMMAND ARGS...: one call through node N's client; CSI_REPLY as csi() sets it.
ncsi() {
  local n=$1 reply; shift
  CSI_REPLY=""
  echo "$*" >&"${CLIENT_IN[$n]}" || return
  IFS= read -r -t 240 reply <&"${CLIENT_OUT[$n]}" || { echo "no reply from node-$n's client to: $1" >&2; return 1; }
  CSI_REPLY=$reply
  [[ $reply == ok* ]] || { echo "node-$n $1: $reply" >&2; return 1; }
}

# ncsi_fails CODE N COMMAND...: the call must fail with CODE.
ncsi_fails() {
  local code=$1 n=$2; shift 2
  if ncsi "$n" "$@" 2>/dev/null; then echo "node-$n $1 succeeded, expected $code" >&2; return 1; fi
  [[ $(awk '{print $3}' <<<"$CSI_REPLY") == "$code:" ]] || { echo "node-$n $1: expected $code, got: $CSI_REPLY" >&2; return 1; }
  echo "  node-$n $1 refused: ${CSI_REPLY#error }" | cut -c1-400
}

# ------------------------------------------------------------------------- the writer on node A

WRITES=/tmp/bn-fence-writes      # "SEQ ok|fail MS [error]" per write
WRITER_STOP=/tmp/bn-fence-writer-stop
WRITER=""
# Each write: one 4 KiB block "SEQ nnnnnnnn" at slot seq % 256, O_DIRECT, straight to the LUN.
fence_writer() {
  local device=$1 seq=1 block err
  : > "$WRITES"
  block=$(mktemp)
  until [[ -e $WRITER_STOP ]]; do
    printf 'SEQ %08d\n' "$seq" > "$block" && truncate -s 4096 "$block"
    if err=$(dd if="$block" of="$device" bs=4096 seek=$((seq % 256)) oflag=direct conv=notrunc status=none 2>&1); then
      echo "$seq ok $(vm_now_ms)" >> "$WRITES"
    else
      echo "$seq fail $(vm_now_ms) ${err##*: }" >> "$WRITES"
      vm_nap 0.2
    fi
    seq=$((seq + 1))
  done
  rm -f "$block"
}
writer_start() {
  rm -f "$WRITER_STOP"
  fence_writer "$1" & WRITER=$!
  vm_wait "the writer's first writes" 90 sh -c "[ \$(grep -c ' ok ' $WRITES) -ge 5 ]"
}
writer_stop() { touch "$WRITER_STOP"; [[ -n $WRITER ]] && wait "$WRITER"; WRITER=""; true; }
fails_after() { awk -v t="$1" '$2 == "fail" && $3 > t' "$WRITES" | wc -l; }
oks_after() { awk -v t="$1" '$2 == "ok" && $3 > t' "$WRITES" | wc -l; }

# node_takes_over N VOL STAGING: kubelet's retries of node N's stage of raw block volume VOL, every 2 s, refused
# (FAILED_PRECONDITION) until the holder's keys have stood still for the takeover time (TAKEOVER s); TOOK is when
# the stage succeeded. KILLED is when the holder was killed, OBSERVED when N's observation of its last keys began:
# the takeover may not come sooner after that.
node_takes_over() {
  local n=$1 vol=$2 staging=$3 deadline=$((SECONDS + 120)) tries=0
  until ncsi "$n" stagex "$vol" "$staging" block $(node_ctx "$n") 2>/dev/null; do
    tries=$((tries + 1))
    [[ $CSI_REPLY == *FAILED_PRECONDITION* ]] || { echo "unexpected: $CSI_REPLY" >&2; return 1; }
    ((SECONDS < deadline)) || { echo "no takeover in 120 s: $CSI_REPLY" >&2; return 1; }
    sleep 2
  done
  TOOK=$(vm_now_ms)
  echo "  node-$n took over $((TOOK - KILLED)) ms after the kill, $((TOOK - OBSERVED)) ms after its observation of" \
       "the holder's last keys began, after $tries refused retries"
  ((TOOK - OBSERVED >= TAKEOVER * 1000)) || { echo "taken over before the takeover time" >&2; return 1; }
}

# lun_holds_only_good_writes FILE: every "SEQ n" in FILE (the array's backing file of the volume) is a write the
# writer saw succeed, and the newest of them is the writer's last good one: what A wrote before the preemption is
# there, nothing it tried after.
lun_holds_only_good_writes() {
  local on_lun bad last_ok newest
  on_lun=$(strings -n 12 "$1" | sed -n 's/^SEQ \([0-9]\{8\}\)$/\1/p' | sed 's/^0*//' | sort -n)
  bad=$(for s in $on_lun; do grep -q "^$s ok " "$WRITES" || echo "$s"; done)
  [[ -z $bad ]] || { echo "on the LUN but never acknowledged to the writer: $(echo $bad | head -c 200)" >&2; return 1; }
  last_ok=$(awk '$2 == "ok" {s = $1} END {print s}' "$WRITES")
  newest=$(tail -n 1 <<<"$on_lun")
  echo "  $(wc -w <<<"$on_lun") sequence numbers on the LUN, newest $newest; the writer's last good write $last_ok;" \
    "$(grep -c ' fail ' "$WRITES") failed writes ($(awk '$2 == "fail" {$1 = $2 = $3 = ""; print}' "$WRITES" | sort | uniq -c | head -n 2 | tr -s ' '))"
  [[ $newest == "$last_ok" ]] || { echo "the newest on the LUN ($newest) is not the last good write ($last_ok)" >&2; return 1; }
}
