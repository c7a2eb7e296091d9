# The kube tier's second node, on the same machine: its own kubelet and containerd, in a mount and a network
# namespace of their own (node-ns.sh holds them); sourced by cluster.sh.
#
#   namespaces    node-ns.sh (component node-b): $NODE_B_DIR/kubelet bound over $WORK/kubelet, the node's state
#                 dir over $STATE_DIR, its own /var/lib/kubelet and /var/log/containers; loopback up
#   network       a veth pair: $NODE_B_VETH (host, $NODE_B_GATEWAY) and eth0 (node, $NODE_B_IP, default route
#                 through the host); the API server reaches kubelet at $NODE_B_IP:10250, kubelet the API server
#                 at $NODE_IP. Its pods: bridge $CNI_BRIDGE_B on $POD_SUBNET_B inside the node's namespace
#   registry      the node pulls from the loopback registry at the same address as the first node: a socat in
#                 the node's namespace on 127.0.0.1:PORT, to one on the host, through a Unix socket
#   containerd    its own root, state and socket under $NODE_B_DIR/containerd
#   kubelet       $KUBE_B_BIN's: versions.txt's kubelet-b, older than the control plane's and node A's (run.sh),
#                 node $NODE_B_NAME, cgroup root /$NODE_B_CGROUP (the first node's kubelet would kill the pods of
#                 another kubelet's under its own kubepods as orphans), registered with the taint
#                 kube-tier/node-b:NoSchedule: only pods that name the node (and the DaemonSet, which tolerates
#                 every taint) run there, so the scenarios that expect the first node keep it
#
# The two nodes share the kernel: a loop device is visible on both, as a LUN on a SAN is, and blocknode's local
# transport stands in for the shared storage.

NODE_B_NAME=blocknode-kube-b
NODE_B_DIR=$WORK/node-b
NODE_B_IP=10.245.0.2
NODE_B_GATEWAY=10.245.0.1
NODE_B_VETH=bnkubeb0
NODE_B_CGROUP=bnkube-b
NODE_B_TAINT=kube-tier/node-b
CNI_BRIDGE_B=bnkube1
POD_SUBNET_B=${POD_SUBNET_B:-10.244.78.0/24}
CSOCK_B=$NODE_B_DIR/containerd/containerd.sock

node_b_pid() { component_running node-b && cat "$WORK/run/node-b.pid"; }

# Runs a command in the second node's namespaces (mount and network).
in_node_b() { nsenter -t "$(node_b_pid)" -m -n -- "$@"; }

up_node_b() {
    mkdir -p "$NODE_B_DIR"/{kubelet,blocknode-state,var-lib-kubelet,var-log-containers,containerd,cni/net.d} \
        "$WORK/kubelet" "$STATE_DIR" /var/lib/kubelet /var/log/containers
    start_component node-b unshare -m -n --propagation slave \
        bash "$here/node-ns.sh" "$WORK" "$NODE_B_DIR" "$STATE_DIR"
    wait_until "node B's namespaces" 30 test -e "$NODE_B_DIR/namespaces-ready" ||
        kube_fail "node B's namespaces were not set up (log: $WORK/logs/node-b.log)"
    local pid
    pid=$(node_b_pid)
    ip link add "$NODE_B_VETH" type veth peer name eth0 netns "$pid" ||
        kube_fail "could not make the veth pair of node B"
    ip addr add "$NODE_B_GATEWAY/30" dev "$NODE_B_VETH"
    ip link set "$NODE_B_VETH" up
    in_node_b ip addr add "$NODE_B_IP/30" dev eth0
    in_node_b ip link set eth0 up
    in_node_b ip route add default via "$NODE_B_GATEWAY"
    local c
    for c in /sys/fs/cgroup/*/; do mkdir -p "$c$NODE_B_CGROUP"; done
    bridge_node_b_to_registry
    up_containerd_b
    up_kubelet_b
    wait_until "node $NODE_B_NAME to be Ready" 120 kc wait --for=condition=Ready "node/$NODE_B_NAME" --timeout=2s ||
        kube_fail "node $NODE_B_NAME is not Ready (log: $WORK/logs/kubelet-b.log)"
}

bridge_node_b_to_registry() {
    local port=${REGISTRY##*:}
    start_component registry-bridge socat "UNIX-LISTEN:$NODE_B_DIR/registry.sock,fork" "TCP:$REGISTRY"
    wait_until "the registry bridge's socket" 30 test -S "$NODE_B_DIR/registry.sock" ||
        kube_fail "socat did not listen on $NODE_B_DIR/registry.sock (log: $WORK/logs/registry-bridge.log)"
    start_component registry-bridge-b nsenter -t "$(node_b_pid)" -n -- \
        socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$NODE_B_DIR/registry.sock"
    wait_until "the registry at $REGISTRY from node B" 30 in_node_b curl -fsS -o /dev/null "http://$REGISTRY/v2/" ||
        kube_fail "node B does not reach the registry at $REGISTRY (log: $WORK/logs/registry-bridge-b.log)"
}

# The first node's configuration with the second node's paths, socket and pod network; the registry hosts
# directory is the same (the same registry at the same address).
up_containerd_b() {
    sed -e "s#^root = .*#root = \"$NODE_B_DIR/containerd/root\"#" \
        -e "s#^state = .*#state = \"$NODE_B_DIR/containerd/state\"#" \
        -e "s#address = \"$CSOCK\"#address = \"$CSOCK_B\"#" \
        -e "s#conf_dir = .*#conf_dir = \"$NODE_B_DIR/cni/net.d\"#" \
        "$WORK/containerd/config.toml" >"$NODE_B_DIR/containerd/config.toml"
    sed -e "s#\"name\": \"bnkube\"#\"name\": \"bnkube-b\"#" -e "s#\"$CNI_BRIDGE\"#\"$CNI_BRIDGE_B\"#" \
        -e "s#$POD_SUBNET#$POD_SUBNET_B#" -e "s#$WORK/cni/ipam#$NODE_B_DIR/cni/ipam#" \
        "$WORK/cni/net.d/10-bnkube.conflist" >"$NODE_B_DIR/cni/net.d/10-bnkube-b.conflist"
    start_component containerd-b nsenter -t "$(node_b_pid)" -m -n -- \
        "$RUNTIME_BIN/containerd" --config "$NODE_B_DIR/containerd/config.toml"
    wait_until "containerd of node B" 60 "$RUNTIME_BIN/ctr" -a "$CSOCK_B" version ||
        kube_fail "containerd of node B did not start (log: $WORK/logs/containerd-b.log)"
    import_images_into "$CSOCK_B" "node B's containerd" "${IMAGE_ARCHIVES[@]}"
}

up_kubelet_b() {
    sed -e "s#^address: .*#address: $NODE_B_IP#" -e "s#unix://$CSOCK#unix://$CSOCK_B#" \
        -e "s#^podLogsDir: .*#podLogsDir: $NODE_B_DIR/pod-logs#" "$WORK/kubelet-config.yaml" >"$NODE_B_DIR/kubelet-config.yaml"
    cat >>"$NODE_B_DIR/kubelet-config.yaml" <<EOT
cgroupRoot: /$NODE_B_CGROUP
registerWithTaints: [{key: $NODE_B_TAINT, effect: NoSchedule}]
EOT
    mkdir -p "$NODE_B_DIR/pod-logs"
    # --root-dir and --cert-dir name the first node's paths: inside node B's mount namespace they are its own.
    start_component kubelet-b nsenter -t "$(node_b_pid)" -m -n -- "$KUBE_B_BIN/kubelet" \
        --config "$NODE_B_DIR/kubelet-config.yaml" --kubeconfig "$WORK/pki/kubelet-b.kubeconfig" \
        --root-dir "$WORK/kubelet" --cert-dir "$WORK/kubelet/pki" \
        --hostname-override "$NODE_B_NAME" --node-ip "$NODE_B_IP" -v "${KUBELET_VERBOSITY:-2}"
}

# The kubelets' versions as the API server has them from each node: node A at the control plane's, node B at
# KUBE_B_VERSION (run.sh): every scenario that uses both nodes then runs across that skew.
check_kubelet_versions() {
    local a b control
    a=$(kc get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kubeletVersion}')
    b=$(kc get node "$NODE_B_NAME" -o jsonpath='{.status.nodeInfo.kubeletVersion}')
    control=$(kc version -o json | sed -n '/serverVersion/,$ s/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | head -1)
    [[ $a == "$control" ]] || kube_fail "node $NODE_NAME's kubelet reports $a, not the control plane's $control"
    [[ $b == "$KUBE_B_VERSION" ]] || kube_fail "node $NODE_B_NAME's kubelet reports $b, not $KUBE_B_VERSION"
    kube_log "kubelets: $NODE_NAME $a, $NODE_B_NAME $b; control plane $control"
}

# Node B as a power cut leaves it: every process of the node killed -9 at once, without warning (kubelet,
# containerd, the shims, and every container of its pods: the plugin's too), but its namespaces kept, held by
# node-ns.sh, so its mounts (staging, publications) and its state dir stay as they were, as on a machine whose
# disks keep what was written. up_containerd_b and up_kubelet_b bring it back in the same namespaces.
power_cut_node_b() {
    local round pids
    for round in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(node_b_processes)
        [[ -z $pids ]] && return 0
        # shellcheck disable=SC2086 # one word per pid
        kill -KILL $pids 2>/dev/null || true
        sleep 0.2
    done
    kube_fail "processes of node B survived kill -9: $(node_b_processes)"
}

# The pids of node B: those in its mount namespace (kubelet, containerd, the shims) other than node-ns.sh and its
# sleep, which hold the namespaces, and those in its cgroup (the containers, in mount namespaces of their own).
node_b_processes() {
    local holder ns pid
    holder=$(node_b_pid) || return 0
    ns=$(readlink "/proc/$holder/ns/mnt")
    for pid in /proc/[0-9]*; do
        pid=${pid#/proc/}
        [[ $pid == "$holder" || $(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null) == "$holder" ]] && continue
        [[ $(readlink "/proc/$pid/ns/mnt" 2>/dev/null) == "$ns" ]] && echo "$pid"
    done
    find "/sys/fs/cgroup/pids/$NODE_B_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null
}

# Everything of node B, stopped by pid; its namespaces go with their last process (its mounts, the veth pair,
# its bridge and iptables chains with them). Safe to run twice and when node B never came up.
node_b_down() {
    stop_component kubelet-b 30
    kill_tasks "$CSOCK_B"
    stop_component containerd-b 20
    pkill -KILL -f "containerd-shim-runc-v2 .*-address $CSOCK_B" 2>/dev/null || true
    stop_component registry-bridge-b
    stop_component registry-bridge
    stop_component node-b
    ip link del "$NODE_B_VETH" 2>/dev/null || true
    local c
    for c in /sys/fs/cgroup/*/; do
        [[ -d $c$NODE_B_CGROUP ]] && find "$c$NODE_B_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    return 0
}

# What node B still has of volumes: CSI mounts under its kubelet root (in its mount namespace) and staging
# records in its state dir.
csi_mount_targets_b() {
    node_b_pid >/dev/null || return 0
    in_node_b findmnt -rn -o TARGET |
        grep -E "^$WORK/kubelet/(pods/.*/volumes/kubernetes.io~csi/|plugins/kubernetes.io/csi/)" || true
}
staging_records_b() { STATE_DIR=$NODE_B_DIR/blocknode-state staging_records "$1"; } # volume
device_mounts_b() { in_node_b bash -c "$(declare -f device_mounts); device_mounts $1"; } # device
# Node B let go of VOLUME on DEVICE: no mount of it in its namespace, no staging record.
released_b() { [[ $(device_mounts_b "$2") == 0 && $(staging_records_b "$1") == 0 ]]; } # volume device

# After node_b_down: no veth and no cgroup of node B.
check_node_b_gone() {
    local left=0 c
    if ip link show "$NODE_B_VETH" >/dev/null 2>&1; then echo "kube: node B's veth $NODE_B_VETH is left" >&2; left=1; fi
    for c in /sys/fs/cgroup/*/; do
        [[ -d $c$NODE_B_CGROUP ]] && { echo "kube: node B's cgroup $c$NODE_B_CGROUP is left" >&2; left=1; }
    done
    return $left
}
