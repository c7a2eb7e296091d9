#!/bin/bash
# Smoke scenario of the VM tier, run inside the guest by run-guest.sh.
#
# One 320 MB LUN exported by tgtd on two portals, logged in on both with manual scanning, scanned by
# its H:C:T:L only, assembled into a two-path dm-multipath map; then the plugin (the host's jar, run
# in the guest) stages and publishes it through its `local` transport, a file is written and fsynced,
# and after unpublish/unstage/restage/republish its checksum must be unchanged. Finally the initiator
# side is taken apart the way a node plugin must do it (unmount, flush the map, delete each path,
# log out, delete the node records) and the guest must be left with nothing.
#
# One line per step, with its duration. Exit 0 only if every step passed.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/lib.sh"
source "$HERE/jvm.sh"

REPO=${VM_REPO:-$(cd "$HERE/../../.." && pwd)}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
JAVA=$JAVA_HOME/bin/java
# The host's jar, as ../e2e.sh copied it before the boot (or java/target's when run by hand).
PLUGIN_JAR=${GUEST_PLUGIN_JAR:-$REPO/java/target/blocknode.jar}
# GuestClient, compiled and packed on the host by ../e2e.sh (see the README on why not in the guest).
CLIENT_JAR=${GUEST_CLIENT_JAR:-${VM_WORK:-$REPO/test-e2e/target/vm}/guest-client.jar}
# AOT caches trained on the host (../e2e.sh), when there are: they halve the JVMs' start under TCG.
# A cache that does not match (jar rebuilt since) is ignored by the JVM with a warning in its log.
PLUGIN_JAVA_OPTS=("${VM_JAVA_OPTS[@]}")
CLIENT_JAVA_OPTS=("${VM_JAVA_OPTS[@]}")
[[ -f ${GUEST_PLUGIN_AOT:-} ]] && PLUGIN_JAVA_OPTS+=("-XX:AOTCache=$GUEST_PLUGIN_AOT")
[[ -f ${GUEST_CLIENT_AOT:-} ]] && CLIENT_JAVA_OPTS+=("-XX:AOTCache=$GUEST_CLIENT_AOT")

IQN=iqn.2024-01.dev.blocknode:smoke
P=/tmp/p                     # the plugin's socket, kubelet root and state (the guest's /tmp: overlay)
SOCKET=$P/csi.sock
KUBELET=$P/kubelet
VOLUME=smoke-vol
STAGING=$KUBELET/plugins/kubernetes.io/csi/block.csi.blocknode.dev/$VOLUME/globalmount
TARGET=$KUBELET/pods/pod-1/volumes/kubernetes.io~csi/$VOLUME/mount
FSTYPE=ext4

DISKS=()        # sdX of each path, in portal order
SESSIONS=()     # sessionN of each portal
WWID=""
DM=""
PLUGIN_PID=""
SUM=""
STEPS_OK=0

# --------------------------------------------------------------------------- plugin and its client

# The plugin and the client are launched before the SAN comes up and awaited after it: the first
# JVM of a boot is the slowest thing in the scenario (TCG translates the JVM's code once, and every
# later JVM reuses that), and the daemons' start leaves the two vCPUs idle enough to overlap with it.
launch_plugin() {
  mkdir -p "$P"
  "$JAVA" "${PLUGIN_JAVA_OPTS[@]}" -jar "$PLUGIN_JAR" --endpoint "unix://$SOCKET" --kubelet-root "$KUBELET" \
    --state-dir "$P/state" --log-format text > "$VM_RESULTS/plugin.log" 2>&1 &
  PLUGIN_PID=$!
  # "serve" reads one command a line and answers "ok MS" or "error MS CODE: DESCRIPTION".
  coproc CLIENT { exec "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$PLUGIN_JAR:$CLIENT_JAR" GuestClient "$SOCKET" serve \
                    2> "$VM_RESULTS/client.log"; }
}

plugin_ready() {
  vm_wait_alive "$PLUGIN_PID" "the plugin's socket" 120 test -S "$SOCKET" &&
    vm_wait_alive "$PLUGIN_PID" "the plugin to answer Probe" 120 csi probe
}

# csi COMMAND ARGS...: one call through the client; fails with the plugin's gRPC status.
csi() {
  local reply
  [[ -n ${CLIENT_PID:-} ]] || { echo "the CSI client is not running" >&2; return 1; }
  echo "$*" >&"${CLIENT[1]}" || return
  IFS= read -r -t 180 reply <&"${CLIENT[0]}" || { echo "no reply from the CSI client to: $*" >&2; return 1; }
  [[ $reply == ok* ]] || { echo "csi $1: $reply" >&2; return 1; }
}

stop_plugin() {
  if [[ -n ${CLIENT_PID:-} ]]; then
    local fd=${CLIENT[1]} pid=$CLIENT_PID
    exec {fd}>&-          # end of input: the client closes its channel and exits
    wait "$pid" 2>/dev/null
  fi
  [[ -n $PLUGIN_PID ]] || return 0
  kill -TERM "$PLUGIN_PID" 2>/dev/null
  local rc=0
  wait "$PLUGIN_PID" || rc=$?
  PLUGIN_PID=""
  # 143 (SIGTERM) is a normal stop for a JVM whose shutdown hook ran.
  [[ $rc == 0 || $rc == 143 ]] || { echo "the plugin exited $rc" >&2; return 1; }
}

# ------------------------------------------------------------------------------------------ checks

mounted_from_map() { [[ $(findmnt -rn -o SOURCE --mountpoint "$1") == /dev/mapper/$WWID || \
                        $(findmnt -rn -o SOURCE --mountpoint "$1") == /dev/$DM ]]; }
not_mounted() { ! findmnt -rn --mountpoint "$1" >/dev/null; }

stage()     { csi stage "$VOLUME" "/dev/mapper/$WWID" "$STAGING" "$FSTYPE" && mounted_from_map "$STAGING"; }
publish()   { csi publish "$VOLUME" "$STAGING" "$TARGET" "$FSTYPE" && mounted_from_map "$TARGET"; }
unpublish() { csi unpublish "$VOLUME" "$TARGET" && not_mounted "$TARGET"; }
unstage()   { csi unstage "$VOLUME" "$STAGING" && not_mounted "$STAGING"; }

write_data() {
  dd if=/dev/urandom of="$TARGET/data" bs=1M count=8 conv=fsync status=none &&
    SUM=$(sha256sum < "$TARGET/data" | cut -d' ' -f1) && [[ -n $SUM ]]
}
verify_data() {
  local now
  # Drop the guest's clean caches first, so the bytes come back from the target, through both layers.
  sync && echo 3 > /proc/sys/vm/drop_caches || return
  now=$(sha256sum < "$TARGET/data" | cut -d' ' -f1)
  [[ $now == "$SUM" ]] || { echo "checksum changed: wrote $SUM, read $now" >&2; return 1; }
}

# ----------------------------------------------------------------------------------------- iSCSI

login_all() {
  local portal
  for portal in "${VM_PORTALS[@]}"; do vm_iscsi_login "$IQN" "$portal:$VM_ISCSI_PORT" || return; done
  # Manual scan means the logins brought no disk with them.
  [[ -z $(ls -d /sys/block/sd* 2>/dev/null) ]] || { echo "disks appeared without a scan" >&2; return 1; }
}

scan_all() {
  local portal session disk
  for portal in "${VM_PORTALS[@]}"; do
    session=$(vm_iscsi_session "$IQN" "$portal:$VM_ISCSI_PORT") || { echo "no session for $portal" >&2; return 1; }
    disk=$(vm_scan_lun "$session" 1) || return
    SESSIONS+=("$session"); DISKS+=("$disk")
  done
  echo "  paths: ${DISKS[*]} (sessions ${SESSIONS[*]})"
}

assemble_map() {
  WWID=$(vm_wwid "${DISKS[0]}") && [[ -n $WWID ]] || { echo "no WWID for ${DISKS[0]}" >&2; return 1; }
  [[ $(vm_wwid "${DISKS[1]}") == "$WWID" ]] || { echo "the two paths report different WWIDs" >&2; return 1; }
  DM=$(vm_wait_mpath "$WWID" "${DISKS[@]}") || return
  echo "  map: /dev/mapper/$WWID -> /dev/$DM"
}

flush_map() { multipath -f "$WWID" && vm_wait "the map to go" 30 sh -c "! test -e /dev/mapper/$WWID"; }
delete_paths() { local disk; for disk in "${DISKS[@]}"; do vm_remove_disk "$disk" || return; done; }
logout_all() {
  local portal
  for portal in "${VM_PORTALS[@]}"; do vm_iscsi_logout "$IQN" "$portal:$VM_ISCSI_PORT" || return; done
}
nothing_left() { udevadm settle --timeout=30; vm_leftovers; }

# ------------------------------------------------------------------------------------------- run

# A failed step ends the scenario: dump the state, then take down what can be taken down (best
# effort, so that a second failure does not hide the first), and exit 1.
cleanup_after_failure() {
  vm_diagnose
  echo "----- plugin log (tail)"; tail -n 20 "$VM_RESULTS/plugin.log" 2>/dev/null
  stop_plugin 2>/dev/null
  vm_initiator_teardown
}

step() {
  if vm_step "$@"; then
    STEPS_OK=$((STEPS_OK + 1))
  else
    cleanup_after_failure
    echo "smoke: FAILED at step $1 after $STEPS_OK steps"
    exit 1
  fi
}

started=$(vm_now_ms)
vm_log "smoke: kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB"
step plugin-launch          launch_plugin
step san-start              vm_san_start
step target-create          vm_target_create 1 "$IQN" 320
step iscsi-login-2-portals  login_all
step scan-lun-2-paths       scan_all
step multipath-map          assemble_map
step plugin-ready           plugin_ready
step stage-$FSTYPE          stage
step publish                publish
step write-fsync-sha256     write_data
step unpublish              unpublish
step unstage                unstage
step restage                stage
step republish              publish
step verify-sha256          verify_data
step unpublish-2            unpublish
step unstage-2              unstage
step plugin-stop            stop_plugin
step multipath-flush        flush_map
step delete-paths           delete_paths
step iscsi-logout-delete    logout_all
step nothing-left           nothing_left
step san-stop               vm_san_stop
echo "smoke: all $STEPS_OK steps passed in $(( $(vm_now_ms) - started )) ms"
