#!/bin/bash
# sanity: csi-sanity, the CSI conformance suite, against the plugin over a real SAN path.
#
#   csi-sanity --csi.endpoint ----------> sanity front ----> blocknode (the plugin, iscsi transport)
#              --csi.controllerendpoint -> test controller --backend tgt: each CreateVolume is a new LUN
#                                          of an iSCSI target on the guest's tgtd (both portals)
#
# The same two processes as the host tier (test-e2e/sanity/run-sanity.sh; the e2e jar's SanityMain),
# but the controller's volumes are tgt LUNs instead of loop devices, so every NodeStageVolume of the
# suite logs in on two portals, scans its LUN, verifies the WWID and mounts a multipath map; every
# NodeUnstageVolume takes all of it down again. csi-sanity runs once per access type in
# GUEST_SANITY_ACCESS_TYPES: "mount block" by default, as on the host tier ("mount" alone halves the time:
# the block run is the same SAN path without mkfs; see the README's timings). Each run
# must have no failed spec and at least one passed, and at the end the node must be clean: no sd or dm
# device, session, node record, mount or staging record, and the controller must have deleted its LUNs
# and its target.
#
# With GUEST_SANITY_BACKEND=nvmet (the sanity-nvme scenario) the same over NVMe/TCP instead: the controller
# makes a subsystem on the kernel's NVMe target (configfs, both portals at port 4420) and each CreateVolume
# is a namespace of it (a loop device over the volume's file), so every NodeStageVolume connects the
# plugin's nvme-tcp transport on two portals (or reuses the controllers another volume's stage made), checks
# the namespace's UUID on both paths and mounts the multipath head; the node must end with no controller.
#
# With GUEST_SANITY_BACKEND=fc (the sanity-fc scenario) over Fibre Channel: fc-lib.sh's fabric (FCoE VN2VN over
# two veth pairs), and the controller's fc backend makes a tcm_fc TPG on each array port with an ACL for each
# node port, then each CreateVolume is a fileio LUN exported on both (a random unit serial, so a new WWID per
# volume). The ports are enabled only once the controller listens: a node port that logged in before its TPG
# and ACL existed never sees the array port as a target. Every NodeStageVolume scans that LUN behind both
# remote ports, checks its WWID on both paths and mounts the multipath map; every NodeUnstageVolume flushes the
# map and deletes both disks, leaving no SCSI target behind the remote ports.
#
# Results (in $VM_RESULTS): junit-TYPE.xml, sanity-TYPE.log, skipped-TYPE.txt (each skipped spec and
# why), plugin.log, e2e.log, commands.log (what the plugin ran), metrics.txt.
HERE=$(dirname "$(readlink -f "$0")")
BACKEND=${GUEST_SANITY_BACKEND:-tgt}
case $BACKEND in
  tgt) source "$HERE/iscsi-lib.sh" ;;
  nvmet) source "$HERE/nvme-lib.sh" ;;
  fc) source "$HERE/fc-lib.sh" ;;
  *) echo "GUEST_SANITY_BACKEND must be tgt, nvmet or fc, not $BACKEND"; exit 2 ;;
esac

E2E_JAR=${GUEST_E2E_JAR:-$REPO/test-e2e/target/blocknode-e2e.jar}
CSI_SANITY=${GUEST_CSI_SANITY:-$REPO/.tools/bin/csi-sanity-v5.6.0}
SUMMARY=$REPO/test-e2e/sanity/junit-summary.py
read -r -a ACCESS_TYPES <<<"${GUEST_SANITY_ACCESS_TYPES:-mount block}"
NODE_ID=sanity-node
TID=21
IQN=iqn.2024-01.dev.blocknode:sanity
SUBSYS_NQN=nqn.2024-01.dev.blocknode:sanity   # the nvmet backend's subsystem
CONTROLLER_SOCK=$BN_P/controller.sock
FRONT_SOCK=$BN_P/front.sock
# 64 MiB: enough for ext4 (the plugin's default filesystem; csi-sanity's mount volumes name none), and
# each mkfs over iSCSI under emulation stays short. (The host tier uses 512 MiB so that PLUGIN_ARGS can
# pick xfs, which needs 300 MB.) csi-sanity's expansion tests ask for this plus 1 GiB.
VOLUME_SIZE=$((64 << 20))
E2E_PID=""
SANITY_PID=""
TOTALS=()

E2E_JAVA_OPTS=("${VM_JAVA_OPTS[@]}")
[[ -f ${GUEST_E2E_AOT:-} ]] && E2E_JAVA_OPTS+=("-XX:AOTCache=$GUEST_E2E_AOT")

# Where the controller keeps volume files, and its backend's flags.
if [[ $BACKEND == nvmet ]]; then
  WORK_DIR=$NVME_LUNS/sanity
  BACKEND_ARGS=(--backend nvmet --nvmet-nqn "$SUBSYS_NQN" --nvmet-portals "127.0.0.1:$NVME_PORT,127.0.0.2:$NVME_PORT")
elif [[ $BACKEND == fc ]]; then
  WORK_DIR=$FC_LUNS/sanity
  BACKEND_ARGS=() # the ports' WWPNs are known once the fabric exists: fc_backend_args
else
  WORK_DIR=$VM_LUN_DIR/sanity
  BACKEND_ARGS=(--backend tgt --tgt-tid "$TID" --tgt-iqn "$IQN" --tgt-portals "$PORTAL1,$PORTAL2")
fi

e2e_launch() {
  mkdir -p "$WORK_DIR"
  "$JAVA" "${E2E_JAVA_OPTS[@]}" -jar "$E2E_JAR" \
    --controller-endpoint "unix://$CONTROLLER_SOCK" --front-endpoint "unix://$FRONT_SOCK" \
    --plugin-endpoint "unix://$SOCKET" --node-id "$NODE_ID" --work-dir "$WORK_DIR" "${BACKEND_ARGS[@]}" \
    > "$VM_RESULTS/e2e.log" 2>&1 &
  E2E_PID=$!
}

plugin_launch() {
  rm -rf "$BN_P"
  mkdir -p "$BN_P" "$KUBELET"
  "$JAVA" "${PLUGIN_JAVA_OPTS[@]}" -jar "$PLUGIN_JAR" --endpoint "unix://$SOCKET" --node-id "$NODE_ID" \
    --kubelet-root "$KUBELET" --state-dir "$STATE" --log-format text --metrics-address "$BN_METRICS" \
    --shutdown-grace 10s > "$VM_RESULTS/plugin.log" 2>&1 &
  PLUGIN_PID=$!
}

# Both JVMs say when they listen; a socket file alone may be a stale one.
all_listening() {
  vm_wait_alive "$PLUGIN_PID" "the plugin to listen" 120 grep -q "listening on unix://$SOCKET" "$VM_RESULTS/plugin.log" &&
    vm_wait_alive "$E2E_PID" "the test controller and front to listen" 120 \
      grep -q "test controller ($BACKEND volumes) on unix://$CONTROLLER_SOCK" "$VM_RESULTS/e2e.log"
}

# The fc backend's flags: the array ports get a TPG each, the node ports an ACL on each.
fc_backend_args() {
  BACKEND_ARGS=(--backend fc --fc-targets "${FC_WWPN[${FC_ARRAY_PORTS[0]}]},${FC_WWPN[${FC_ARRAY_PORTS[1]}]}"
                --fc-initiators "${FC_WWPN[${FC_NODE_PORTS[0]}]},${FC_WWPN[${FC_NODE_PORTS[1]}]}")
}

target_exists() {
  if [[ $BACKEND == nvmet ]]; then
    [[ -e $NVMET/subsystems/$SUBSYS_NQN ]]
  elif [[ $BACKEND == fc ]]; then # its TPGs' ports, or its backstores' HBA (LioFcBackend.HBA)
    [[ -e $FC_TARGET/fc/${FC_WWPN[${FC_ARRAY_PORTS[0]}]} || -e $FC_TARGET/fc/${FC_WWPN[${FC_ARRAY_PORTS[1]}]} ||
       -e $FC_TARGET/core/fileio_21 ]]
  else
    tgtadm --lld iscsi --mode target --op show | grep -q "^Target $TID: "
  fi
}
# The node is clean: for NVMe, no controller or nvme device either; for FC, no SCSI target behind its ports.
node_clean() {
  case $BACKEND in
    nvmet) nvme_node_clean ;;
    fc) fc_node_clean ;;
    *) bn_node_clean ;;
  esac
}

# run_sanity TYPE: one csi-sanity run, with the host tier's arguments; its report and log into results.
run_sanity() {
  local type=$1 rc=0 counts passed failed skipped pending
  mkdir -p "$KUBELET/$type"   # csi-sanity makes and removes target/ and staging/ under it per spec
  "$CSI_SANITY" \
    --csi.endpoint "unix://$FRONT_SOCK" \
    --csi.controllerendpoint "unix://$CONTROLLER_SOCK" \
    --csi.mountdir "$KUBELET/$type/target" \
    --csi.stagingdir "$KUBELET/$type/staging" \
    --csi.testvolumeaccesstype="$type" \
    --csi.testvolumesize="$VOLUME_SIZE" \
    --ginkgo.junit-report="$VM_RESULTS/junit-$type.xml" \
    --ginkgo.timeout="${GUEST_SANITY_TIMEOUT:-10m}" \
    --ginkgo.no-color \
    > "$VM_RESULTS/sanity-$type.log" 2>&1 &
  SANITY_PID=$!
  wait "$SANITY_PID" || rc=$?
  SANITY_PID=""
  [[ -s $VM_RESULTS/junit-$type.xml ]] || { echo "csi-sanity ($type) wrote no report; exit $rc" >&2; tail -n 30 "$VM_RESULTS/sanity-$type.log" >&2; return 1; }
  counts=$(python3 "$SUMMARY" "$type" "$VM_RESULTS/junit-$type.xml" "$VM_RESULTS/skipped-$type.txt") || return
  read -r passed failed skipped pending <<<"$counts"
  TOTALS+=("sanity-$type: $passed passed, $failed failed, $skipped skipped")
  ((pending == 0)) || TOTALS[-1]+=" ($pending pending: disabled in csi-sanity itself)"
  echo "  ${TOTALS[-1]}; csi-sanity exit $rc"
  # Zero passed would be a run that tested nothing (every spec skipped): that fails too.
  ((failed == 0 && rc == 0 && passed > 0))
}

e2e_stop() {
  [[ -n $E2E_PID ]] || return 0
  local rc=0
  kill -TERM "$E2E_PID" 2>/dev/null
  wait "$E2E_PID" || rc=$?
  E2E_PID=""
  [[ $rc == 0 || $rc == 143 ]] || { echo "the e2e process exited $rc" >&2; return 1; }
  grep -q "stopped; every volume withdrawn ($BACKEND)" "$VM_RESULTS/e2e.log" ||
    { echo "the e2e process did not release its volumes:" >&2; tail -n 20 "$VM_RESULTS/e2e.log" >&2; return 1; }
  ! target_exists || { echo "the controller's target ($BACKEND) is still there" >&2; return 1; }
  [[ -z $(ls -A "$WORK_DIR") ]] || { echo "LUN files left: $(ls "$WORK_DIR")" >&2; return 1; }
  [[ $BACKEND == tgt || -z $(losetup -a) ]] || { echo "loop devices left: $(losetup -a)" >&2; return 1; }
}

bn_on_fail() {
  [[ -n $SANITY_PID ]] && kill -TERM "$SANITY_PID" 2>/dev/null && wait "$SANITY_PID"
  e2e_stop 2>/dev/null
  tail -n 40 "$VM_RESULTS"/sanity-*.log 2>/dev/null
}

# -------------------------------------------------------------------------------------------- run

BN_STARTED=$(vm_now_ms)
mkdir -p "$VM_RESULTS"
rm -f "$VM_RESULTS/xfail" "$VM_RESULTS"/junit-*.xml
vm_log "$BN_SCENARIO: kernel $(uname -r), $(nproc) vCPUs; csi-sanity $CSI_SANITY"
[[ -x $CSI_SANITY ]] || { echo "no csi-sanity at $CSI_SANITY (make builds it into .tools/bin)"; exit 2; }
[[ -f $E2E_JAR ]] || { echo "no e2e jar at $E2E_JAR"; exit 2; }
# The plugin's JVM starts while the SAN comes up; the controller needs tgtd (it creates its target).
step plugin-launch plugin_launch
if [[ $BACKEND == nvmet ]]; then
  step host-identity nvme_host_identity
  step modules nvme_modules
  pidof systemd-udevd >/dev/null || { BN_OWN_SAN=yes; step udevd vm_udevd_start; }
elif [[ $BACKEND == fc ]]; then
  BN_OWN_SAN=yes
  step modules fc_modules
  step udevd vm_udevd_start
  step multipathd vm_multipathd_start
  step fabric fc_fabric_create
  step luns-tmpfs fc_luns_mount
  fc_backend_args
elif ! { pidof tgtd && pidof iscsid && pidof multipathd && pidof systemd-udevd; } >/dev/null; then
  BN_OWN_SAN=yes
  step san-start vm_san_start
fi
step install-shims bn_install_shims
BN_COMMANDS_FROM=$(wc -l < "$BN_COMMAND_LOG")
step e2e-launch e2e_launch
step listening all_listening
# FC: the controller has made its TPGs and ACLs; now the ports log in and find the array's ports as targets.
[[ $BACKEND == fc ]] && step fabric-enable fc_enable

for type in "${ACCESS_TYPES[@]}"; do
  step "csi-sanity-$type" run_sanity "$type"
  step "node-clean-after-$type" node_clean
done

bn_phase_report
step e2e-stop e2e_stop
step plugin-stop bn_plugin_stop
bn_save_commands
step node-clean node_clean
if [[ $BN_OWN_SAN == yes && $BACKEND == nvmet ]]; then
  step udevd-stop eval 'udevadm control --exit && vm_wait "udevd to exit" 60 sh -c "! pidof systemd-udevd"'
elif [[ $BACKEND == fc ]]; then
  step san-delete fc_san_delete
  step daemons-stop fc_daemons_stop
elif [[ $BN_OWN_SAN == yes ]]; then
  step san-stop vm_san_stop
fi
printf '%s\n' "${TOTALS[@]}" | tee "$VM_RESULTS/totals.txt"
echo "$BN_SCENARIO: all $BN_STEPS_OK steps passed in $(( $(vm_now_ms) - BN_STARTED )) ms"
