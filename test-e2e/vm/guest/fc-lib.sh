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

# The tmpfs that holds the LUNs' backing files (the sanity backend's too).
fc_luns_mount() {
  mkdir -p "$FC_LUNS" && { mountpoint -q "$FC_LUNS" || mount -t tmpfs -o size=1g,mode=700 bn-fc "$FC_LUNS"; }
}

# fc_backstore_create ID SIZE_MB: a fileio backstore over a file of that size, with unit serial fc_serial ID
# (so WWID fc_wwid ID).
fc_backstore_create() {
  local id=$1 size=$2 store=$FC_TARGET/core/fileio_$1/lun$1
  truncate -s "${size}M" "$(fc_lun_file "$id")" && mkdir -p "$store" || return
  echo "fd_dev_name=$(fc_lun_file "$id"),fd_dev_size=$((size * 1024 * 1024))" > "$store/control" || return
  fc_serial "$id" > "$store/wwn/vpd_unit_serial" && echo 1 > "$store/enable"
}
fc_backstore_delete() { rmdir "$FC_TARGET/core/fileio_$1/lun$1" "$FC_TARGET/core/fileio_$1" && rm -f "$(fc_lun_file "$1")"; }

# fc_tpg I / fc_acl I: array port I's TPG, and in it the ACL of the node port on the same pair.
fc_tpg() { echo "$FC_TARGET/fc/${FC_WWPN[${FC_ARRAY_PORTS[$1]}]}/tpgt_1"; }
fc_acl() { echo "$(fc_tpg "$1")/acls/${FC_WWPN[${FC_NODE_PORTS[$1]}]}"; }

# fc_lun_map ID LUN: backstore ID exported as LUN on both array ports, mapped in each one's ACL.
fc_lun_map() {
  local id=$1 lun=$2 i tpg acl
  for i in 0 1; do
    tpg=$(fc_tpg $i); acl=$(fc_acl $i)
    mkdir -p "$tpg/lun/lun_$lun" && ln -s "$FC_TARGET/core/fileio_$id/lun$id" "$tpg/lun/lun_$lun/store" || return
    mkdir -p "$acl/lun_$lun" && ln -s "$tpg/lun/lun_$lun" "$acl/lun_$lun/map" || return
  done
}
# fc_lun_unmap LUN: what the array does when the LUN is deleted: no port exports it any more.
fc_lun_unmap() {
  local lun=$1 i tpg acl
  for i in 0 1; do
    tpg=$(fc_tpg $i); acl=$(fc_acl $i)
    rm -f "$acl/lun_$lun/map" && rmdir "$acl/lun_$lun" && rm -f "$tpg/lun/lun_$lun/store" && rmdir "$tpg/lun/lun_$lun" || return
  done
}
# fc_lun_replace LUN ID SIZE_MB: the array deletes LUN (its backstore too) and maps a new one, backstore ID
# (another serial, so another WWID), at the same number.
fc_lun_replace() { fc_lun_unmap "$1" && fc_backstore_delete "$1" && fc_backstore_create "$2" "$3" && fc_lun_map "$2" "$1"; }

# fc_array_create SIZE_MB...: LUN 0, 1... of those sizes (backstores 0, 1...), exported on both array ports to
# the node port of the same pair. Made before the controllers are enabled: a node port that logs in before its
# TPG and ACL exist sees the array port as an initiator only, and keeps seeing it so (measured: no FCP Target
# role within 30 s of the TPG's creation; nothing makes the ports log in again).
fc_array_create() {
  local lun=0 size
  fc_luns_mount || return
  for size in "$@"; do
    fc_backstore_create $lun "$size" && fc_lun_map $lun $lun || return
    lun=$((lun + 1))
  done
  FC_LUN_COUNT=$lun
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
# fc_port_timeouts I: dev_loss_tmo and fast_io_fail_tmo of the node's remote port for array port I.
fc_port_timeouts() {
  local r want=${FC_WWPN[${FC_ARRAY_PORTS[$1]}]//:/}
  for r in /sys/class/fc_remote_ports/rport-"${FC_HOST[${FC_NODE_PORTS[$1]}]}":*; do
    [[ -e $r && $(sed 's/^0x//' "$r/port_name") == "$want" ]] && echo "dev_loss_tmo $(cat "$r/dev_loss_tmo") fast_io_fail_tmo $(cat "$r/fast_io_fail_tmo")"
  done
}
# fc_rport_of I: the sysfs directory of the node's remote port for array port I (an FCP Target).
fc_rport_of() {
  local r want=${FC_WWPN[${FC_ARRAY_PORTS[$1]}]//:/}
  for r in /sys/class/fc_remote_ports/rport-"${FC_HOST[${FC_NODE_PORTS[$1]}]}":*; do
    [[ -e $r && $(sed 's/^0x//' "$r/port_name") == "$want" ]] && grep -q "FCP Target" "$r/roles" && { echo "$r"; return; }
  done
  return 1
}
# fc_port_short_loss I SECONDS: the node's remote port for array port I gives its disks up SECONDS after it is
# lost (dev_loss_tmo), where multipathd made it 60 s; fast_io_fail_tmo 1 first, as it must stay below. The
# kernel takes neither while the port is Blocked, so this is set while it is Online; multipathd sets its own
# values again when the path is next added to a map.
fc_port_short_loss() {
  local r; r=$(fc_rport_of "$1") || { echo "no remote port for array port $(($1 + 1))" >&2; return 1; }
  echo 1 > "$r/fast_io_fail_tmo" && echo "$2" > "$r/dev_loss_tmo" || return
  echo "  ${r##*/}: $(fc_port_timeouts "$1")"
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

# fc_lun_ctx LUN WWID: the volume context of LUN through both array ports, with WWID as its identity.
fc_lun_ctx() {
  echo "transport=fc targetWWNs=${FC_WWPN[${FC_ARRAY_PORTS[0]}]},${FC_WWPN[${FC_ARRAY_PORTS[1]}]} lun=$1 wwids=$2"
}
# fc_ctx LUN: LUN's context with its own WWID (fc_array_create's LUN N is backstore N).
fc_ctx() { fc_lun_ctx "$1" "$(fc_wwid "$1")"; }

# fc_target_id I: the SCSI target id of the node's remote port for array port I.
fc_target_id() {
  local r want=${FC_WWPN[${FC_ARRAY_PORTS[$1]}]//:/}
  for r in /sys/class/fc_remote_ports/rport-"${FC_HOST[${FC_NODE_PORTS[$1]}]}":*; do
    [[ -e $r && $(sed 's/^0x//' "$r/port_name") == "$want" ]] && grep -q "FCP Target" "$r/roles" && { cat "$r/scsi_target_id"; return; }
  done
  return 1
}
# fc_scan_by_hand LUN: what an HBA's own scan does (the kernel's default scan mode scans every LUN of a new
# target): LUN's disk behind both node ports, made without the plugin.
fc_scan_by_hand() {
  local i h t
  for i in 0 1; do
    h=${FC_HOST[${FC_NODE_PORTS[$i]}]}; t=$(fc_target_id $i) || return
    echo "0 $t $1" > "/sys/class/scsi_host/host$h/scan" || return
    vm_wait "a disk at $h:0:$t:$1" 30 sh -c "ls /sys/bus/scsi/devices/$h:0:$t:$1/block/ 2>/dev/null | grep -q ." || return
  done
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

# The SCSI targets behind the node's remote ports, each with the devices in it: "H:C:T: H:C:T:L..." lines. A
# remote port has none until a LUN is scanned; the kernel removes a target with its last device.
fc_scsi_targets() {
  local iface t
  for iface in "${FC_NODE_PORTS[@]}"; do
    for t in /sys/class/scsi_host/host"${FC_HOST[$iface]}"/device/rport-*/target*; do
      [[ -e $t ]] && echo "${t##*/target}: $(cd "$t" && ls -d [0-9]*:*:*:* 2>/dev/null | tr '\n' ' ')"
    done
  done
}

# Nothing of FC left on the node's side: no disk, no SCSI device and no SCSI target behind its remote ports
# (the fabric itself stays up).
fc_leftovers() {
  local left
  left=$(fc_scsi_targets)
  [[ -z $left ]] || { echo "left behind the node's FC remote ports: $(echo $left) (disks: $(fc_disks | tr '\n' ' '))"; return 1; }
}

# fc_only_luns LUN...: the node's remote ports hold the SCSI targets of these LUNs' scans, one per port, and no
# other LUN: the plugin's scans were targeted.
fc_only_luns() {
  local iface t want have
  for iface in "${FC_NODE_PORTS[@]}"; do
    t=(/sys/class/scsi_host/host"${FC_HOST[$iface]}"/device/rport-*/target*)
    [[ ${#t[@]} == 1 && -e ${t[0]} ]] || { echo "host${FC_HOST[$iface]}: ${#t[@]} SCSI targets: ${t[*]}" >&2; return 1; }
    want=$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')
    have=$(cd "${t[0]}" && ls -d [0-9]*:*:*:* | sed 's/.*://' | sort -n | tr '\n' ' ')
    [[ $have == "$want" ]] || { echo "host${FC_HOST[$iface]}: LUNs $have, expected $want" >&2; return 1; }
  done
  echo "  $(fc_scsi_targets | tr '\n' ';')"
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

# Stops what fc_begin started besides the plugin: multipathd, udevd.
fc_daemons_stop() {
  multipathd shutdown >/dev/null
  udevadm control --exit && vm_wait "udevd to exit" 60 sh -c "! pidof systemd-udevd"
}

fc_end() {
  bn_phase_report
  step plugin-stop  bn_plugin_stop
  step node-clean   fc_node_clean
  step san-delete   fc_san_delete
  step daemons-stop fc_daemons_stop
  echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
}
