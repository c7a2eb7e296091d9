# shellcheck shell=bash
# Shared by the scenarios that drive the plugin's own fc transport against the kernel's Fibre Channel stack:
# FCoE in VN2VN mode (no FC switch: FIP between the two ends) over veth pairs inside the guest, with LIO's
# tcm_fc as the array. The node's side is what an FC HBA shows: fc_host, fc_remote_ports and fc_transport in
# sysfs, SCSI disks behind remote ports, dm-multipath over them. The plugin scans, verifies and tears down by
# itself; nothing here scans a LUN. The plugin, client and step framework are iscsi-lib.sh's (no iSCSI daemon
# is started: fc_begin replaces bn_begin).
#
# Fabric: two veth pairs, fcn1<->fca1 and fcn2<->fca2 (the node's two HBA ports and the array's two target
# ports), MTU 9000 (an FC frame is up to 2,148 bytes). An FCoE controller on each of the four ends, made
# through sysfs alone (/sys/bus/fcoe/ctlr_create, mode vn2vn, enabled): fcoe-utils is not needed. Array:
# one fileio backstore per LUN on a tmpfs, exported by a tcm_fc TPG on each array port (LUNs 0..N-1), with an
# ACL for the node port on the same pair. scsi_mod's scan mode is set to manual first, so that the kernel
# does not scan the targets' LUNs by itself: the plugin's targeted scan is what finds them, as on a node
# where an array maps many LUNs to the host.
HERE=${HERE:-$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")}
source "$HERE/iscsi-lib.sh"

FC_TARGET=/sys/kernel/config/target
FC_LUNS=/srv/bn-fc
FC_MTU=9000
FC_NODE_PORTS=(fcn1 fcn2)
FC_ARRAY_PORTS=(fca1 fca2)
declare -A FC_CTLR=() FC_HOST=() FC_WWPN=()
FC_LUN_COUNT=0

# fc_serial LUN: the LUN's unit serial, hex digits only: LIO derives the NAA identifier from the serial's hex
# digits, so two serials that differ only in other characters would give two LUNs one WWID.
fc_serial() { printf '0fc0e2e%05x' "$1"; }
# fc_wwid LUN: the LUN's WWID as multipath and the plugin see it: "3" + NAA 6 (LIO's OUI 001405) + the serial's
# hex digits, zero-padded to 32 hex digits.
fc_wwid() { local naa; naa="6001405$(fc_serial "$1")"; printf '3%s%0*d' "$naa" $((32 - ${#naa})) 0; }
fc_lun_file() { echo "$FC_LUNS/lun$1.img"; }

fc_modules() {
  # LIO writes a LUN's persistent reservation state (APTPL) under its db_root on every PR OUT, even with
  # APTPL off, and fails the command (LOGICAL UNIT COMMUNICATION FAILURE) when it cannot: /etc/target must
  # exist before target_core_mod loads, or it takes /var/target, which does not exist either.
  mkdir -p /etc/target/pr || return
  modprobe configfs || return
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return
  modprobe -a veth fcoe tcm_fc target_core_file sd_mod scsi_dh_alua dm_multipath dm_round_robin ext4 || return
  # Without a newline: the parameter holds at most 6 characters ("manual\n" is ENOSPC).
  printf manual > /sys/module/scsi_mod/parameters/scan
}

# The WWPN of a controller's fc_host, in LIO's spelling (lower case, colons).
fc_wwpn_of_host() { sed -e 's/^0x//' -e 's/../&:/g' -e 's/:$//' "/sys/class/fc_host/host$1/port_name"; }

# fc_ctlr_create IFACE: an FCoE controller on IFACE, in VN2VN mode, not yet enabled; records its ctlr, host
# and WWPN.
fc_ctlr_create() {
  local iface=$1 c h
  echo "$iface" > /sys/bus/fcoe/ctlr_create || return
  for c in /sys/bus/fcoe/devices/ctlr_*; do
    h=$(ls -d "$c"/host* 2>/dev/null | head -n 1)
    [[ -n $h ]] && grep -q " over $iface\$" "/sys/class/fc_host/${h##*/}/symbolic_name" 2>/dev/null || continue
    FC_CTLR[$iface]=${c##*/}; FC_HOST[$iface]=${h##*/host}
  done
  [[ -n ${FC_CTLR[$iface]:-} ]] || { echo "no FCoE controller appeared for $iface" >&2; return 1; }
  echo vn2vn > "/sys/bus/fcoe/devices/${FC_CTLR[$iface]}/mode" || return
  FC_WWPN[$iface]=$(fc_wwpn_of_host "${FC_HOST[$iface]}")
  echo "  $iface: ${FC_CTLR[$iface]}, host${FC_HOST[$iface]}, WWPN ${FC_WWPN[$iface]}"
}

# The two pairs and a disabled controller on each end.
fc_fabric_create() {
  local i mac=0
  for i in 0 1; do
    ip link add "${FC_NODE_PORTS[$i]}" type veth peer name "${FC_ARRAY_PORTS[$i]}" || return
    for iface in "${FC_NODE_PORTS[$i]}" "${FC_ARRAY_PORTS[$i]}"; do
      mac=$((mac + 1))
      ip link set "$iface" address "02:fc:00:00:00:0$mac" mtu "$FC_MTU" up || return
    done
  done
  for iface in "${FC_NODE_PORTS[@]}" "${FC_ARRAY_PORTS[@]}"; do fc_ctlr_create "$iface" || return; done
}

# fc_array_create SIZE_MB...: LUN 0, 1... of those sizes, exported on both array ports to the node port of
# the same pair. Made before the controllers are enabled, so the first login already finds the target role.
fc_array_create() {
  local lun=0 size store i port tpg
  mkdir -p "$FC_LUNS" && { mountpoint -q "$FC_LUNS" || mount -t tmpfs -o size=1g,mode=700 bn-fc "$FC_LUNS"; } || return
  for size in "$@"; do
    store=$FC_TARGET/core/fileio_$lun/lun$lun
    truncate -s "${size}M" "$(fc_lun_file $lun)" && mkdir -p "$store" || return
    echo "fd_dev_name=$(fc_lun_file $lun),fd_dev_size=$((size * 1024 * 1024))" > "$store/control" || return
    fc_serial $lun > "$store/wwn/vpd_unit_serial" && echo 1 > "$store/enable" || return
    lun=$((lun + 1))
  done
  FC_LUN_COUNT=$lun
  for i in 0 1; do
    tpg=$FC_TARGET/fc/${FC_WWPN[${FC_ARRAY_PORTS[$i]}]}/tpgt_1
    port=${FC_WWPN[${FC_NODE_PORTS[$i]}]}
    for ((lun = 0; lun < FC_LUN_COUNT; lun++)); do
      mkdir -p "$tpg/lun/lun_$lun" && ln -s "$FC_TARGET/core/fileio_$lun/lun$lun" "$tpg/lun/lun_$lun/store" || return
      mkdir -p "$tpg/acls/$port/lun_$lun" && ln -s "$tpg/lun/lun_$lun" "$tpg/acls/$port/lun_$lun/map" || return
    done
  done
}

fc_hosts_online() {
  local iface
  for iface in "${!FC_HOST[@]}"; do grep -qx Online "/sys/class/fc_host/host${FC_HOST[$iface]}/port_state" || return; done
}

# fc_target_port_state I: the state of the node's remote port for array port I (0 or 1), or "absent".
fc_target_port_state() {
  local r want=${FC_WWPN[${FC_ARRAY_PORTS[$1]}]//:/}
  for r in /sys/class/fc_remote_ports/rport-"${FC_HOST[${FC_NODE_PORTS[$1]}]}":*; do
    [[ -e $r ]] || continue
    [[ $(sed 's/^0x//' "$r/port_name") == "$want" ]] || continue
    if grep -q "FCP Target" "$r/roles"; then cat "$r/port_state"; return; fi
  done
  echo absent
}
fc_targets_online() { [[ $(fc_target_port_state 0) == Online && $(fc_target_port_state 1) == Online ]]; }

# Enables the four controllers: VN2VN claims port ids, the ends log in to each other.
fc_enable() {
  local iface
  for iface in "${FC_NODE_PORTS[@]}" "${FC_ARRAY_PORTS[@]}"; do
    echo 1 > "/sys/bus/fcoe/devices/${FC_CTLR[$iface]}/enabled" || return
  done
  vm_wait "4 fc_hosts Online" 60 fc_hosts_online &&
    vm_wait "the node's remote ports for both array ports: FCP Target, Online" 90 fc_targets_online
}

fc_san_create() { fc_fabric_create && fc_array_create "$@" && fc_enable; }

# fc_ctx LUN [KEY=VALUE...]: the volume context of LUN through both array ports, with its WWID as identity.
fc_ctx() {
  local lun=$1; shift
  echo "transport=fc targetWWNs=${FC_WWPN[${FC_ARRAY_PORTS[0]}]},${FC_WWPN[${FC_ARRAY_PORTS[1]}]} lun=$lun wwids=$(fc_wwid "$lun") $*"
}

# SCSI disks behind the node's FC hosts: prints "H:C:T:L sdX" lines.
fc_disks() {
  local iface d
  for iface in "${FC_NODE_PORTS[@]}"; do
    for d in /sys/class/scsi_host/host"${FC_HOST[$iface]}"/device/rport-*/target*/*:*:*:*/block/*; do
      [[ -e $d ]] && { d=${d%/block/*}; echo "${d##*/} $(ls "$d/block")"; }
    done
  done
}

# Nothing of FC left on the node's side: no disk behind its hosts (the fabric itself stays up).
fc_leftovers() {
  local left
  left=$(fc_disks)
  [[ -z $left ]] || { echo "left over FC disks: $(echo $left)"; return 1; }
}

# Takes the fabric down: controllers (ctlr_destroy returns before the host is gone: waits), the array's
# configfs tree, the backstores, the pairs, the tmpfs.
fc_san_delete() {
  local iface rc=0 tpg port lun
  for iface in "${!FC_CTLR[@]}"; do
    echo 0 > "/sys/bus/fcoe/devices/${FC_CTLR[$iface]}/enabled" 2>/dev/null
    echo "$iface" > /sys/bus/fcoe/ctlr_destroy || rc=1
  done
  vm_wait "the FCoE controllers to go" 30 sh -c '[ -z "$(ls /sys/bus/fcoe/devices/)" ] && [ -z "$(ls /sys/class/fc_host/)" ]' || rc=1
  FC_CTLR=(); FC_HOST=()
  for tpg in "$FC_TARGET"/fc/*/tpgt_1; do
    [[ -d $tpg ]] || continue
    for port in "$tpg"/acls/*; do
      [[ -d $port ]] || continue
      for lun in "$port"/lun_*; do [[ -d $lun ]] && { rm -f "$lun/map"; rmdir "$lun" || rc=1; }; done
      rmdir "$port" || rc=1
    done
    for lun in "$tpg"/lun/lun_*; do [[ -d $lun ]] && { rm -f "$lun/store"; rmdir "$lun" || rc=1; }; done
    rmdir "$tpg" "${tpg%/tpgt_1}" || rc=1
  done
  for lun in "$FC_TARGET"/core/fileio_*; do
    [[ -d $lun ]] || continue
    rmdir "$lun"/lun* "$lun" || rc=1
  done
  for iface in "${FC_NODE_PORTS[@]}"; do ip link show "$iface" >/dev/null 2>&1 && { ip link del "$iface" || rc=1; }; done
  mountpoint -q "$FC_LUNS" && { umount "$FC_LUNS" || rc=1; }
  return $rc
}

fc_diagnose() {
  echo "----- FC at $(vm_uptime) s"
  local h r
  for h in /sys/class/fc_host/host*; do
    [[ -e $h ]] && echo "  ${h##*/}: $(cat "$h/port_name") $(cat "$h/port_state") ($(cat "$h/symbolic_name"))"
  done
  for r in /sys/class/fc_remote_ports/rport-*; do
    [[ -e $r ]] && echo "  ${r##*/}: $(cat "$r/port_name") $(cat "$r/port_state") [$(cat "$r/roles")] target $(cat "$r/scsi_target_id")"
  done
  echo "  disks: $(fc_disks | tr '\n' ' ')"
  multipath -ll 2>&1 | head -n 20
  echo "----- plugin log (tail)"; tail -n 30 "$VM_RESULTS/plugin.log" 2>/dev/null
  dmesg | grep -iE 'fcoe|libfc|rport|host[0-9]|sd[a-z]' | tail -n 15
  echo "-----"
}

# iscsi-lib.sh's failure path, for FC: diagnose, stop the plugin, take down disks, maps and the fabric.
bn_fail() {
  declare -F bn_on_fail >/dev/null && bn_on_fail
  fc_diagnose
  bn_plugin_stop 2>/dev/null
  vm_initiator_teardown >/dev/null 2>&1
  fc_san_delete >/dev/null 2>&1
  udevadm control --exit 2>/dev/null
  echo "$BN_SCENARIO: FAILED at step $1 after $BN_STEPS_OK steps ($(( $(vm_now_ms) - BN_STARTED )) ms)"
  exit 1
}

fc_node_clean() { fc_leftovers && bn_node_clean; }

fc_begin() {
  BN_STARTED=$(vm_now_ms)
  mkdir -p "$VM_RESULTS"
  rm -f "$VM_RESULTS/xfail" "$VM_RESULTS/secret-canaries"
  vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs"
  step plugin-launch bn_plugin_launch
  step modules       fc_modules
  step udevd         vm_udevd_start
  step multipathd    vm_multipathd_start
  BN_OWN_SAN=yes
}

fc_end() {
  bn_phase_report
  step plugin-stop  bn_plugin_stop
  step node-clean   fc_node_clean
  step san-delete   fc_san_delete
  step daemons-stop eval 'multipathd shutdown >/dev/null; udevadm control --exit && vm_wait "udevd to exit" 60 sh -c "! pidof systemd-udevd"'
  echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
}
