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
# Then, over iSCSI only, csi-sanity once more with every volume encrypted (LUKS2), for each access type in
# GUEST_SANITY_LUKS_TYPES ("mount" by default; "" skips it): --csi.testvolumeparameters gives every CreateVolume
# "encryption: luks2", which the test controller passes on in the volume_context; --csi.secrets gives every
# NodeStageVolume the passphrase as "encryptionPassphrase"; csi-sanity has no setting for NodeExpandVolume's
# secrets, so the sanity front adds the same passphrase to each NodeExpandVolume that has none (kubelet sends a
# StorageClass's node-expand secret so; the plugin needs it to grow the crypt mapping, and an unencrypted volume
# ignores it). The run must pass as the plain ones do, and encryption must have been in effect: from the command
# record (cryptsetup and mkfs are shimmed) at least one luksFormat and open, as many closes as opens, and every
# filesystem made on a crypt mapping; after it no crypt mapping is left. The passphrase is random per boot, in
# files on the guest's /run only, and listed in secret-canaries (the host fails the run if any result file holds it).
#
# Which specs run where: every run (each access type, and the encrypted pass) runs every Node Service spec (the
# plugin's node RPCs, over this boot's transport) and the Identity ones (the plugin's, cheap). csi-sanity's
# "[Controller Server]" specs (CreateVolume, ListVolumes, snapshots, ControllerExpandVolume...) run in the boot's
# first run only: they talk to the test controller (test-e2e's, not the product) and touch the plugin with
# NodeGetInfo and the clean-up's unstage of volumes never staged, which the Node specs cover in every run; the
# access type, the transport and the encryption parameter change nothing the plugin does there. Run again, they
# only made and deleted the test controller's LUNs or namespaces. The later runs skip them (--ginkgo.skip), and
# check that no Node Service spec was skipped by that filter.
#
# Results (in $VM_RESULTS): junit-TYPE.xml, sanity-TYPE.log, skipped-TYPE.txt (each skipped spec and
# why), plugin.log, e2e.log, commands.log (what the plugin ran), metrics.txt.
#
# vm-limit: 1200  (its boot's, plus 100 s: 224-527 s in make test runs on an older machine, about 1.6x that here)
HERE=$(dirname "$(readlink -f "$0")")
BACKEND=${GUEST_SANITY_BACKEND:-tgt}
case $BACKEND in
  tgt) source "$HERE/iscsi-lib.sh" ;;
  nvmet) source "$HERE/nvme-lib.sh" ;;
  fc) source "$HERE/fc-lib.sh" ;;
  *) echo "GUEST_SANITY_BACKEND must be tgt, nvmet or fc, not $BACKEND"; exit 2 ;;
esac
# The encrypted pass: over iSCSI only (the other backends' boots are unchanged).
LUKS_TYPES=""
if [[ $BACKEND == tgt ]]; then
  LUKS_TYPES=${GUEST_SANITY_LUKS_TYPES-mount}
  BN_SHIMMED+=(cryptsetup) # its argv in the command record: what was formatted LUKS2, opened, closed
fi
read -r -a LUKS_ACCESS_TYPES <<<"$LUKS_TYPES"
LUKS_DIR=/run/bn-sanity-luks # the guest's tmpfs: the passphrase never reaches a result file
MKFS_LOG=/run/bn-sanity-mkfs.log

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

# luks_files: the encrypted pass's passphrase (random, never printed) in csi-sanity's secrets file, the front's
# node-expand secrets and csi-sanity's volume parameters; listed in secret-canaries.
luks_files() {
  local key
  key=sk$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 30)
  mkdir -p "$LUKS_DIR" && chmod 700 "$LUKS_DIR" || return
  printf 'NodeStageVolumeSecret:\n  encryptionPassphrase: %s\n' "$key" > "$LUKS_DIR/secrets.yaml"
  printf 'encryptionPassphrase=%s\n' "$key" > "$LUKS_DIR/expand.properties"
  printf 'encryption: luks2\n' > "$LUKS_DIR/parameters.yaml"
  printf '%s\n' "$key" > "$VM_RESULTS/secret-canaries"
}

# mkfs_probe_install: mkfs.ext4 and mkfs.xfs wrapped (in /usr/local/sbin, first on the plugin's search path; the
# guest's overlay only) to append "TOOL DEVICE DM-UUID" to $MKFS_LOG before they run: the dm uuid of what is
# being formatted, read from sysfs at that moment (CRYPT-LUKS2-... for a LUKS2 mapping, mpath-... for a
# multipath map, "none" for a device that is no dm device).
mkfs_probe_install() {
  local tool real
  : > "$MKFS_LOG"
  for tool in mkfs.ext4 mkfs.xfs; do
    real=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin type -P "$tool") || { echo "no $tool to wrap" >&2; return 1; }
    cat > "/usr/local/sbin/$tool" <<EOF
#!/bin/bash
# blocknode VM tier, sanity (guest overlay only): records what $tool formats and its dm uuid, then runs it.
dev=\${!#}
uuid=\$(cat "/sys/class/block/\$(basename "\$(readlink -f "\$dev")")/dm/uuid" 2>/dev/null)
echo "$tool \$dev \${uuid:-none}" >> $MKFS_LOG
exec $real "\$@"
EOF
    chmod 755 "/usr/local/sbin/$tool"
  done
  hash -r
}

e2e_launch() {
  local luks_args=()
  ((${#LUKS_ACCESS_TYPES[@]})) && luks_args=(--node-expand-secrets "$LUKS_DIR/expand.properties")
  mkdir -p "$WORK_DIR"
  "$JAVA" "${E2E_JAVA_OPTS[@]}" -jar "$E2E_JAR" \
    --controller-endpoint "unix://$CONTROLLER_SOCK" --front-endpoint "unix://$FRONT_SOCK" \
    --plugin-endpoint "unix://$SOCKET" --node-id "$NODE_ID" --work-dir "$WORK_DIR" "${BACKEND_ARGS[@]}" "${luks_args[@]}" \
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

# The test controller's own specs (see the header): csi-sanity's Controller Server containers.
CONTROLLER_SPECS='\[Controller Server\]'
CONTROLLER_SPECS_RUN="" # the run that had them: the first

# filter_skipped_node_specs SKIPPED_FILE: the Node Service specs that a --ginkgo.skip left out (ginkgo's reason for a
# filtered spec is the bare word "skipped"; csi-sanity's own skips give theirs).
filter_skipped_node_specs() { paste - - < "$1" | grep -F 'Node Service' | grep -E $'\t +skipped$'; }

# run_sanity TYPE [luks]: one csi-sanity run, with the host tier's arguments (and with "luks", every volume
# encrypted: its parameters and secrets files); its report and log into results, named TYPE or TYPE-luks. The
# boot's first run has the controller specs, the others skip them (see the header).
run_sanity() {
  local type=$1 name=$1 rc=0 counts passed failed skipped pending extra=() left
  if [[ ${2:-} == luks ]]; then
    name=$type-luks
    extra=(--csi.testvolumeparameters "$LUKS_DIR/parameters.yaml" --csi.secrets "$LUKS_DIR/secrets.yaml")
  fi
  if [[ -z $CONTROLLER_SPECS_RUN ]]; then
    CONTROLLER_SPECS_RUN=$name
  else
    extra+=(--ginkgo.skip="$CONTROLLER_SPECS")
  fi
  local type_dir=$KUBELET/$name
  mkdir -p "$type_dir"   # csi-sanity makes and removes target/ and staging/ under it per spec
  "$CSI_SANITY" \
    --csi.endpoint "unix://$FRONT_SOCK" \
    --csi.controllerendpoint "unix://$CONTROLLER_SOCK" \
    --csi.mountdir "$type_dir/target" \
    --csi.stagingdir "$type_dir/staging" \
    --csi.testvolumeaccesstype="$type" "${extra[@]}" \
    --csi.testvolumesize="$VOLUME_SIZE" \
    --ginkgo.junit-report="$VM_RESULTS/junit-$name.xml" \
    --ginkgo.timeout="${GUEST_SANITY_TIMEOUT:-10m}" \
    --ginkgo.no-color \
    > "$VM_RESULTS/sanity-$name.log" 2>&1 &
  SANITY_PID=$!
  wait "$SANITY_PID" || rc=$?
  SANITY_PID=""
  [[ -s $VM_RESULTS/junit-$name.xml ]] || { echo "csi-sanity ($name) wrote no report; exit $rc" >&2; tail -n 30 "$VM_RESULTS/sanity-$name.log" >&2; return 1; }
  counts=$(python3 "$SUMMARY" "$name" "$VM_RESULTS/junit-$name.xml" "$VM_RESULTS/skipped-$name.txt") || return
  read -r passed failed skipped pending <<<"$counts"
  TOTALS+=("sanity-$name: $passed passed, $failed failed, $skipped skipped")
  ((pending == 0)) || TOTALS[-1]+=" ($pending pending: disabled in csi-sanity itself)"
  [[ $CONTROLLER_SPECS_RUN == "$name" ]] || TOTALS[-1]+=" (the controller specs left to sanity-$CONTROLLER_SPECS_RUN)"
  echo "  ${TOTALS[-1]}; csi-sanity exit $rc"
  left=$(filter_skipped_node_specs "$VM_RESULTS/skipped-$name.txt")
  [[ -z $left ]] || { echo "Node Service specs left out by --ginkgo.skip:" >&2; echo "$left" >&2; return 1; }
  # Zero passed would be a run that tested nothing (every spec skipped): that fails too.
  ((failed == 0 && rc == 0 && passed > 0))
}

# luks_in_effect FROM MKFS_FROM TYPE: since line FROM of the command record and line MKFS_FROM of the mkfs
# probe's, every volume was encrypted: LUKS2 formats and opens by the plugin, a close for each open, and (mount)
# every filesystem made on a LUKS2 mapping (its dm uuid CRYPT-LUKS2-...). Prints what it counted.
luks_in_effect() {
  local from=$1 mkfs_from=$2 type=$3 cmds made formats opens closes mkfs off_crypt
  cmds=$(tail -n +"$((from + 1))" "$BN_COMMAND_LOG" | grep -F ' java[' | grep -E ' -> 0 \(')
  made=$(tail -n +"$((mkfs_from + 1))" "$MKFS_LOG")
  formats=$(grep -cE ' cryptsetup luksFormat .*--type luks2' <<<"$cmds")
  opens=$(grep -E ' cryptsetup open ' <<<"$cmds" | grep -vc -e '--test-passphrase')
  closes=$(grep -cE ' cryptsetup close ' <<<"$cmds")
  mkfs=$(grep -c . <<<"$made")
  off_crypt=$(grep -v ' CRYPT-LUKS2-' <<<"$made")
  echo "  $type-luks: $formats luksFormat, $opens open, $closes close, $mkfs mkfs (all on crypt mappings: $([[ -z $off_crypt ]] && echo yes || echo no))"
  ((formats > 0 && opens > 0)) || { echo "no LUKS2 format or open: the volumes were not encrypted" >&2; return 1; }
  ((closes == opens)) || { echo "$opens crypt mappings opened, $closes closed" >&2; return 1; }
  [[ -z $off_crypt ]] || { echo "filesystems made off a crypt mapping:" >&2; echo "$off_crypt" >&2; return 1; }
  [[ $type != mount ]] || ((mkfs > 0)) || { echo "the mount run made no filesystem" >&2; return 1; }
}
no_crypt_mapping() {
  local left
  left=$(dmsetup ls --target crypt 2>/dev/null | grep -v '^No devices found')
  [[ -z $left ]] || { echo "crypt mappings left: $left" >&2; return 1; }
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
rm -f "$VM_RESULTS/xfail" "$VM_RESULTS"/junit-*.xml "$VM_RESULTS/secret-canaries"
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
((${#LUKS_ACCESS_TYPES[@]})) && step mkfs-probe mkfs_probe_install
BN_COMMANDS_FROM=$(wc -l < "$BN_COMMAND_LOG")
((${#LUKS_ACCESS_TYPES[@]})) && step luks-files luks_files
step e2e-launch e2e_launch
step listening all_listening
# FC: the controller has made its TPGs and ACLs; now the ports log in and find the array's ports as targets.
[[ $BACKEND == fc ]] && step fabric-enable fc_enable

for type in "${ACCESS_TYPES[@]}"; do
  step "csi-sanity-$type" run_sanity "$type"
  step "node-clean-after-$type" node_clean
done
for type in "${LUKS_ACCESS_TYPES[@]}"; do
  luks_from=$(wc -l < "$BN_COMMAND_LOG"); mkfs_from=$(wc -l < "$MKFS_LOG")
  step "csi-sanity-$type-luks" run_sanity "$type" luks
  step "luks-in-effect-$type" luks_in_effect "$luks_from" "$mkfs_from" "$type"
  step "no-crypt-mapping-after-$type" no_crypt_mapping
  step "node-clean-after-$type-luks" node_clean
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
