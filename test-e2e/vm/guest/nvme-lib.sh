# shellcheck shell=bash
# Shared by the scenarios that drive the plugin's own nvme-tcp transport: the guest plays the array with
# the kernel's NVMe target (nvmet + nvmet-tcp, configured through configfs, no daemon) and the node with
# the kernel's NVMe/TCP host (nvme-tcp, native multipath). The plugin connects, verifies and tears down
# by itself; nothing here connects a controller. The plugin, client and step framework are iscsi-lib.sh's
# (no iSCSI daemon is started: nvme_begin replaces bn_begin).
#
# Target: one subsystem ($NVME_NQN, open to any host) listening on 127.0.0.1:4420 and 127.0.0.2:4420 (ports
# 1 and 2, ANA group 1 each), namespaces on loop devices over files on a tmpfs (nvmet's file backend opens
# O_DIRECT, which tmpfs refuses in 6.1: enable fails with EINVAL; a loop device has no such problem).
HERE=${HERE:-$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")}
source "$HERE/iscsi-lib.sh"

NVMET=/sys/kernel/config/nvmet
NVME_NQN=nqn.2024-01.dev.blocknode:nvme-e2e
NVME_HOSTID=6b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d
NVME_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$NVME_HOSTID
NVME_PORT=4420
NVME_LUNS=/srv/bn-nvme
NVME_RESV_ENABLE=${NVME_RESV_ENABLE:-0}   # 1: the namespaces support reservations (nvmet's resv_enable)
declare -A NVME_LOOP=()

# nvme_uuid NSID: the UUID (and NGUID) namespace NSID reports: fixed, so the scenarios can ask for it.
nvme_uuid() { printf '0b5e1f8a-3c2d-4e6f-8a9b-%012x' "$1"; }

nvme_modules() {
  modprobe configfs || return
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return
  modprobe -a nvmet nvmet-tcp nvme-tcp loop ext4
}

# The node's NVMe host identity, as nvme-cli would have written it (in the guest's overlay only).
nvme_host_identity() {
  mkdir -p /etc/nvme && echo "$NVME_HOSTNQN" > /etc/nvme/hostnqn && echo "$NVME_HOSTID" > /etc/nvme/hostid
}

# nvme_target_create SIZE_MB...: the subsystem with one namespace per size (NSID 1, 2...), both ports; with
# NVME_RESV_ENABLE=1 each namespace has reservations on (refused on a kernel whose nvmet has none).
nvme_target_create() {
  local s=$NVMET/subsystems/$NVME_NQN nsid=0 size p
  mkdir -p "$NVME_LUNS" && { mountpoint -q "$NVME_LUNS" || mount -t tmpfs -o size=2g,mode=700 bn-nvme "$NVME_LUNS"; } || return
  mkdir "$s" && echo 1 > "$s/attr_allow_any_host" || return
  for size in "$@"; do
    nsid=$((nsid + 1))
    truncate -s "${size}M" "$NVME_LUNS/ns$nsid.img" || return
    NVME_LOOP[$nsid]=$(losetup -f --show "$NVME_LUNS/ns$nsid.img") || return
    mkdir "$s/namespaces/$nsid" || return
    echo "${NVME_LOOP[$nsid]}" > "$s/namespaces/$nsid/device_path" || return
    nvme_uuid "$nsid" > "$s/namespaces/$nsid/device_uuid" || return
    nvme_uuid "$nsid" > "$s/namespaces/$nsid/device_nguid" || return
    if [[ $NVME_RESV_ENABLE == 1 ]]; then
      [[ -e $s/namespaces/$nsid/resv_enable ]] ||
        { echo "this kernel's nvmet has no resv_enable (Linux 6.13 on): no reservations" >&2; return 1; }
      echo 1 > "$s/namespaces/$nsid/resv_enable" || return
    fi
    echo 1 > "$s/namespaces/$nsid/enable" || return
  done
  for p in 1 2; do
    mkdir "$NVMET/ports/$p" || return
    echo tcp > "$NVMET/ports/$p/addr_trtype"; echo ipv4 > "$NVMET/ports/$p/addr_adrfam"
    echo "127.0.0.$p" > "$NVMET/ports/$p/addr_traddr"; echo "$NVME_PORT" > "$NVMET/ports/$p/addr_trsvcid"
    ln -s "$s" "$NVMET/ports/$p/subsystems/$NVME_NQN" || return
  done
  vm_wait "nvmet-tcp listening on $NVME_PORT" 20 vm_tcp_listening "$NVME_PORT"
}

# Takes the target down: ports, namespaces, subsystem, loop devices, the tmpfs.
nvme_target_delete() {
  local s=$NVMET/subsystems/$NVME_NQN p ns rc=0
  for p in "$NVMET"/ports/*; do
    [[ -d $p ]] || continue
    rm -f "$p/subsystems/$NVME_NQN"; rmdir "$p" || rc=1
  done
  for ns in "$s"/namespaces/*; do
    [[ -d $ns ]] || continue
    echo 0 > "$ns/enable"; rmdir "$ns" || rc=1
  done
  [[ -d $s ]] && { rmdir "$s" || rc=1; }
  for ns in "${!NVME_LOOP[@]}"; do losetup -d "${NVME_LOOP[$ns]}" || rc=1; done
  NVME_LOOP=()
  mountpoint -q "$NVME_LUNS" && { umount "$NVME_LUNS" || rc=1; }
  return $rc
}

# nvme_ctx NSID [KEY=VALUE...]: the volume context of namespace NSID on both portals.
nvme_ctx() {
  local nsid=$1; shift
  echo "subsysNQN=$NVME_NQN nvmePortals=127.0.0.1:$NVME_PORT,127.0.0.2:$NVME_PORT namespaceUUID=$(nvme_uuid "$nsid") namespaceID=$nsid $*"
}

# Controllers of the subsystem, as the kernel lists them: prints "nvmeN STATE traddr" lines.
nvme_controllers() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [[ -e $c ]] || continue
    [[ $(cat "$c/subsysnqn" 2>/dev/null) == "$NVME_NQN" ]] || continue
    echo "${c##*/} $(cat "$c/state") $(sed -n 's/.*traddr=\([^,]*\).*/\1/p' "$c/address")"
  done
}

# nvme_expect_controllers N: exactly N controllers of the subsystem, all live, one per portal.
nvme_expect_controllers() {
  local list live
  list=$(nvme_controllers)
  live=$(grep -c ' live ' <<<"$list" || true)
  [[ -z $list && $1 == 0 ]] && return 0
  [[ $(wc -l <<<"$list") == "$1" && $live == "$1" && $(awk '{print $3}' <<<"$list" | sort -u | wc -l) == "$1" ]] ||
    { echo "controllers of $NVME_NQN: [$(echo $list)], expected $1 live, one per portal" >&2; return 1; }
}

# nvme_expect_head DEVICE NSID: DEVICE (a /dev path) is the multipath head of namespace NSID, over two
# paths (one per controller), each reporting the namespace's UUID.
nvme_expect_head() {
  local dev name paths p
  dev=$(readlink -f "$1"); name=${dev#/dev/}
  [[ $name =~ ^nvme[0-9]+n[0-9]+$ ]] || { echo "$1 is $dev, not an NVMe namespace head" >&2; return 1; }
  [[ $(cat "/sys/block/$name/uuid") == "$(nvme_uuid "$2")" ]] || { echo "$name is not namespace $2" >&2; return 1; }
  paths=$(ls -d /sys/class/nvme/nvme*/nvme*c*n"${name##*n}" 2>/dev/null)
  [[ $(wc -w <<<"$paths") == 2 ]] || { echo "$name has paths [$(echo $paths)], expected 2" >&2; return 1; }
  for p in $paths; do
    [[ $(cat "$p/uuid") == "$(nvme_uuid "$2")" ]] || { echo "path $p is not namespace $2" >&2; return 1; }
  done
  echo "  $1 = $name, namespace $2 over $(for p in $paths; do printf '%s(%s) ' "${p##*/}" "$(cat "$p/ana_state")"; done)"
}

# The device mounted at a staging path.
nvme_dev_of_mount() { readlink -f "$(findmnt -rn -o SOURCE --mountpoint "$1")"; }

# Nothing of NVMe left on the node: no controller, no nvme block device, no subsystem.
nvme_leftovers() {
  local found=0 path
  for path in /sys/class/nvme/nvme* /sys/class/nvme-subsystem/* /sys/block/nvme*; do
    [[ -e $path ]] && { echo "left over: $path"; found=1; }
  done
  return $found
}

# Takes down by hand whatever NVMe controllers are left (after a failure).
nvme_initiator_teardown() {
  local c
  findmnt -rn -o TARGET,SOURCE | awk '$2 ~ /^\/dev\/nvme/ {print $1}' | sort -r |
    while read -r mnt; do umount "$mnt" || umount -l "$mnt"; done
  for c in /sys/class/nvme/nvme*; do [[ -e $c/delete_controller ]] && echo 1 > "$c/delete_controller"; done
  vm_wait "no NVMe controller" 30 nvme_leftovers >/dev/null
}

nvme_diagnose() {
  echo "----- NVMe at $(vm_uptime) s"
  nvme_controllers
  ls /sys/class/nvme-subsystem/ /sys/block 2>&1 | tr '\n' ' '; echo
  for p in /sys/class/nvme/nvme*/nvme*c*n*; do [[ -e $p ]] && echo "  ${p##*/} ana=$(cat "$p/ana_state")"; done
  echo "----- plugin log (tail)"; tail -n 30 "$VM_RESULTS/plugin.log" 2>/dev/null
  dmesg | grep -iE 'nvme' | tail -n 15
  echo "-----"
}

# iscsi-lib.sh's failure path, for NVMe: diagnose, stop the plugin, take down controllers and target.
bn_fail() {
  declare -F bn_on_fail >/dev/null && bn_on_fail
  nvme_diagnose
  bn_plugin_stop 2>/dev/null
  nvme_initiator_teardown >/dev/null 2>&1
  nvme_target_delete >/dev/null 2>&1
  udevadm control --exit 2>/dev/null
  echo "$BN_SCENARIO: FAILED at step $1 after $BN_STEPS_OK steps ($(( $(vm_now_ms) - BN_STARTED )) ms)"
  exit 1
}

# The node is clean: NVMe (none of it left) and what iscsi-lib.sh checks (mounts, staging records, no
# SCSI or dm device).
nvme_node_clean() {
  nvme_leftovers && bn_node_clean
}

nvme_begin() {
  BN_STARTED=$(vm_now_ms)
  mkdir -p "$VM_RESULTS"
  rm -f "$VM_RESULTS/xfail" "$VM_RESULTS/secret-canaries"
  vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs"
  step host-identity nvme_host_identity
  step plugin-launch bn_plugin_launch
  step modules       nvme_modules
  pidof systemd-udevd >/dev/null || { BN_OWN_SAN=yes; step udevd vm_udevd_start; }
}

nvme_end() {
  bn_phase_report
  step plugin-stop   bn_plugin_stop
  step node-clean    nvme_node_clean
  step target-delete nvme_target_delete
  [[ $BN_OWN_SAN == yes ]] && step udevd-stop eval 'udevadm control --exit && vm_wait "udevd to exit" 60 sh -c "! pidof systemd-udevd"'
  echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
}
