# The cluster of the kube tier and its first node: sourced by run.sh (needs lib.sh, WORK, KUBE_BIN, NODE_NAME). The
# second node (its own kubelet and containerd in namespaces of their own) is node-b.sh's.
#
#   etcd (Debian)          127.0.0.1:$ETCD_PORT, data in $WORK/etcd
#   kube-apiserver         $NODE_IP:$API_PORT; Node + RBAC authorization, NodeRestriction admission; pods
#                          reach it as the kubernetes Service (route_kubernetes_service: no kube-proxy)
#   kube-controller-manager  every default controller (PV binder, attach/detach, DaemonSet, service accounts,
#                          garbage collector...), each with its own service-account credentials
#   kube-scheduler         binds the pods (nothing in the tier sets nodeName by hand)
#   containerd 2 + runc (build-runtime.sh, $RUNTIME_BIN), CNI bridge $CNI_BRIDGE, socket $WORK/containerd/containerd.sock
#   kubelet                root dir $WORK/kubelet, node $NODE_NAME
#
# Host state that kubelet or containerd change outside $WORK is recorded first and put back by cluster_down:
# sysctls kubelet tunes, directories they create (/run/containerd, /var/log/pods, ...), netns and cgroups.

ETCD_PORT=${ETCD_PORT:-23790}
API_PORT=${API_PORT:-16443}
KCM_PORT=${KCM_PORT:-16444}
SCHEDULER_PORT=${SCHEDULER_PORT:-16445}
CNI_BRIDGE=bnkube0
POD_SUBNET=${POD_SUBNET:-10.244.77.0/24}
CSOCK=$WORK/containerd/containerd.sock

# The sysctls kubelet sets when protectKernelDefaults is false (its default); restored on the way down.
KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
                 kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Host paths the node's components (or the DaemonSet's DirectoryOrCreate mounts) may create.
# kubelet keeps its device-plugin socket in /var/lib/kubelet/device-plugins whatever its --root-dir; containerd's
# CNI library caches results in /var/lib/cni and takes a lock in /etc/cni/net.d.
HOST_PATHS=(/run/containerd /var/log/pods /var/log/containers /run/netns /run/udev /etc/iscsi /var/lib/iscsi
            /run/lock/iscsi /etc/multipath /etc/multipath.conf /etc/nvme /var/lib/blocknode /var/lib/kubelet
            /var/lib/cni /etc/cni)

record_host_state() {
    local s p
    for s in "${KUBELET_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$WORK/host.sysctls"
    for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || echo "$p"; done >"$WORK/host.absent-paths"
    ip netns list 2>/dev/null | awk '{ print $1 }' >"$WORK/host.netns"
    local cmd
    for cmd in iptables ip6tables; do
        command -v "$cmd" >/dev/null && kube_chains "$cmd" | sed "s/^/$cmd /"
    done >"$WORK/host.chains"
}

# --- PKI: one CA; serving and client certificates with the identities RBAC and the Node authorizer expect.
make_pki() {
    local p=$WORK/pki
    mkdir -p "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -subj /CN=blocknode-kube-ca -days 2 \
        -out "$p/ca.crt" 2>/dev/null
    cert() { # name subject [subjectAltName]
        local name=$1 subject=$2 san=${3:-}
        {
            echo "basicConstraints=CA:FALSE"
            echo "keyUsage=digitalSignature,keyEncipherment"
            if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
            else echo "extendedKeyUsage=clientAuth"; fi
        } >"$p/$name.ext"
        openssl req -newkey rsa:2048 -nodes -keyout "$p/$name.key" -subj "$subject" -out "$p/$name.csr" 2>/dev/null
        openssl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 2 \
            -extfile "$p/$name.ext" -out "$p/$name.crt" 2>/dev/null
    }
    cert apiserver /CN=kube-apiserver \
        "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP"
    cert admin "/O=system:masters/CN=kube-admin"
    cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
    cert kubelet-b "/O=system:nodes/CN=system:node:$NODE_B_NAME"
    cert controller-manager /CN=system:kube-controller-manager
    cert scheduler /CN=system:kube-scheduler
    cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
    openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
    local user
    for user in admin kubelet kubelet-b controller-manager scheduler; do
        cat >"$p/$user.kubeconfig" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: kube
  cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$p/ca.crt"}
users:
- name: $user
  user: {client-certificate: "$p/$user.crt", client-key: "$p/$user.key"}
contexts:
- name: kube
  context: {cluster: kube, user: $user}
current-context: kube
EOT
    done
}

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

up_etcd() {
    port_free "$ETCD_PORT" || kube_fail "port $ETCD_PORT (etcd) is in use; set ETCD_PORT"
    start_component etcd etcd --name kube --data-dir "$WORK/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "kube=http://127.0.0.1:$((ETCD_PORT + 1))"
    wait_until "etcd" 60 etcd_healthy ||
        kube_fail "etcd did not become healthy (log: $WORK/logs/etcd.log)"
}

etcd_healthy() { curl -fsS "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

up_apiserver() {
    local p=$WORK/pki
    port_free "$API_PORT" || kube_fail "port $API_PORT (kube-apiserver) is in use; set API_PORT"
    start_component apiserver "$KUBE_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
        --bind-address="$NODE_IP" --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
        --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
        --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC \
        --enable-admission-plugins=NodeRestriction --kubelet-preferred-address-types=InternalIP --allow-privileged=true \
        --kubelet-client-certificate="$p/apiserver-kubelet-client.crt" \
        --kubelet-client-key="$p/apiserver-kubelet-client.key" --kubelet-certificate-authority= \
        --profiling=false --feature-gates=CSIVolumeHealth=true
    wait_until "kube-apiserver /readyz" 120 kc get --raw /readyz ||
        kube_fail "kube-apiserver did not become ready (log: $WORK/logs/apiserver.log)"
}

# Pods reach the API server as in any cluster, through the "kubernetes" Service (10.96.0.1:443, the
# in-cluster config of the controller side's external-attacher). This cluster runs no kube-proxy; the one
# rule kube-proxy would write for that Service is written here: the pod network's packets to the Service's
# address go to the API server on the node's address. Its chain is named KUBE-* so that cluster_down's
# iptables cleanup removes it with kubelet's.
route_kubernetes_service() {
    command -v iptables >/dev/null || kube_fail "iptables is required (deps.sh installs it)"
    local chain=KUBE-BNKUBE-SERVICES
    iptables -t nat -N "$chain" 2>/dev/null || iptables -t nat -F "$chain" # left by a run that was killed
    iptables -t nat -A "$chain" -p tcp -d 10.96.0.1 --dport 443 -j DNAT --to-destination "$NODE_IP:$API_PORT"
    iptables -t nat -C PREROUTING -s "$POD_SUBNET" -j "$chain" 2>/dev/null ||
        iptables -t nat -A PREROUTING -s "$POD_SUBNET" -j "$chain"
}

up_controller_manager() {
    local p=$WORK/pki
    port_free "$KCM_PORT" || kube_fail "port $KCM_PORT (kube-controller-manager) is in use; set KCM_PORT"
    # --node-monitor-grace-period: a node whose kubelet has not been heard from for this long is NotReady
    # (Unknown). The default, 50 s, is what the node-lost scenario would wait for nothing; 30 s is still three
    # of kubelet's lease renewals (every 10 s) and fifteen node statuses (every 2 s: kubelet-config.yaml, up_kubelet), so a kubelet slowed
    # by the load of this 2-core machine is not taken for lost.
    start_component controller-manager "$KUBE_BIN/kube-controller-manager" \
        --kubeconfig="$p/controller-manager.kubeconfig" \
        --authentication-kubeconfig="$p/controller-manager.kubeconfig" \
        --authorization-kubeconfig="$p/controller-manager.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
        --use-service-account-credentials=true --service-account-private-key-file="$p/sa.key" \
        --root-ca-file="$p/ca.crt" --cluster-name=blocknode-kube --profiling=false \
        --node-monitor-grace-period=30s
}

up_scheduler() {
    local p=$WORK/pki
    port_free "$SCHEDULER_PORT" || kube_fail "port $SCHEDULER_PORT (kube-scheduler) is in use; set SCHEDULER_PORT"
    start_component scheduler "$KUBE_BIN/kube-scheduler" --kubeconfig="$p/scheduler.kubeconfig" \
        --authentication-kubeconfig="$p/scheduler.kubeconfig" --authorization-kubeconfig="$p/scheduler.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --leader-elect=false --profiling=false
}

up_containerd() {
    mkdir -p "$WORK/containerd" "$WORK/cni/net.d"
    # Config version 3 (containerd 2: the CRI plugin split into images and runtime). runc is named by path: the
    # one build-runtime.sh built ($RUNTIME_BIN), never a runc the host happens to have.
    cat >"$WORK/containerd/config.toml" <<EOT
version = 3
root = "$WORK/containerd/root"
state = "$WORK/containerd/state"
[grpc]
  address = "$CSOCK"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"
  # Registry hosts (hosts.toml per registry, read at each pull): registry.sh names the loopback registry there
  # as plain HTTP, so the pull does not depend on containerd's default for a registry on 127.0.0.1.
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$WORK/containerd/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  # Root here has no CAP_SYS_RESOURCE, so runc cannot give a sandbox kubelet's oom_score_adj of -998
  # ("can't get final child's PID from pipe: EOF"): clamp it at containerd's own value instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$RUNTIME_BIN/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$WORK/cni/net.d"
EOT
    # The bridge is the pods' gateway, with a default route through it: the kubernetes Service's address
    # (route_kubernetes_service) is outside the pod subnet.
    cat >"$WORK/cni/net.d/10-bnkube.conflist" <<EOT
{"cniVersion": "0.4.0", "name": "bnkube", "plugins": [
  {"type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "dataDir": "$WORK/cni/ipam",
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOT
    start_component containerd "$RUNTIME_BIN/containerd" --config "$WORK/containerd/config.toml"
    wait_until "containerd" 60 "$RUNTIME_BIN/ctr" -a "$CSOCK" version || kube_fail "containerd did not start (log: $WORK/logs/containerd.log)"
}

import_images() { # archive...
    import_images_into "$CSOCK" containerd "$@"
}

# The archives into the containerd on SOCKET (node B's too: node-b.sh), named WHICH in a failure.
import_images_into() { # socket which archive...
    local socket=$1 which=$2 archive
    shift 2
    for archive in "$@"; do
        "$RUNTIME_BIN/ctr" -a "$socket" -n k8s.io images import --no-unpack=false "$archive" >/dev/null ||
            kube_fail "could not import $archive into $which"
    done
}

up_kubelet() {
    mkdir -p "$WORK/kubelet" "$WORK/pod-logs"
    cat >"$WORK/kubelet-config.yaml" <<EOT
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $WORK/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CSOCK
cgroupDriver: cgroupfs
# This machine's cgroups are v1 (hybrid); kubelet 1.36 refuses that unless told.
failCgroupV1: false
failSwapOn: false
enforceNodeAllocatable: []
podLogsDir: $WORK/pod-logs
resolvConf: /etc/resolv.conf
# Volume stats every 10 s instead of every minute, so the stats scenario sees them soon.
volumeStatsAggPeriod: 10s
# Pods are resynced every 10 s instead of every minute: a claim grown by the resizer is seen (and
# NodeExpandVolume called) at the next resync.
syncFrequency: 10s
# Node status every 2 s instead of every 10 s. Kubelet mounts a volume that needs attaching only after its node
# status has reported the volume in use, and the attach/detach controller detaches it only after the status has
# dropped it: every pod start and every detach waits for the next status, up to this period. The scenarios check
# the order of those steps, never the period; with 10 s each one paid 5 s on average per volume each way.
nodeStatusUpdateFrequency: 2s
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
featureGates:
  CSIVolumeHealth: true
EOT
    start_component kubelet "$KUBE_BIN/kubelet" --config "$WORK/kubelet-config.yaml" \
        --kubeconfig "$WORK/pki/kubelet.kubeconfig" --root-dir "$WORK/kubelet" --cert-dir "$WORK/kubelet/pki" \
        --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" -v "${KUBELET_VERBOSITY:-2}"
}

wait_node_ready() {
    wait_until "node $NODE_NAME to be Ready" 120 kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s ||
        kube_fail "node $NODE_NAME is not Ready (log: $WORK/logs/kubelet.log)"
}

restart_kubelet() {
    stop_component kubelet 30
    up_kubelet
    wait_node_ready
}

cluster_up() {
    make_pki
    up_etcd
    up_apiserver
    route_kubernetes_service
    up_controller_manager
    up_scheduler
    up_containerd
}

# Every task of the containerd on SOCKET killed, then deleted, when that containerd is up (node B's too:
# node-b.sh): the pods' containers go before the runtime that tracks them.
kill_tasks() { # socket
    local socket=$1 id
    [[ -S $socket ]] || return 0
    for id in $(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
        ctr -a "$socket" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
        ctr -a "$socket" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
    done
}

# Everything the tier started, stopped by pid; everything it mounted, unmounted; host state put back. Safe to
# run twice and after a partial bring-up.
cluster_down() {
    node_b_down
    stop_component kubelet 30
    kill_tasks "$CSOCK"
    stop_component containerd 20
    # The shims outlive containerd; ours are the ones given our containerd's socket.
    pkill -KILL -f "containerd-shim-runc-v2 .*-address $CSOCK" 2>/dev/null || true
    stop_component scheduler
    stop_component controller-manager
    stop_component apiserver
    stop_component etcd
    stop_component registry
    local m
    for m in $(findmnt -rn -o TARGET | grep "^$WORK" | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    local ns
    for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ { print $1 }'); do
        grep -qx "$ns" "$WORK/host.netns" 2>/dev/null || ip netns delete "$ns"
    done
    ip link del "$CNI_BRIDGE" 2>/dev/null || true
    local c top
    for c in /sys/fs/cgroup/*/; do
        for top in kubepods k8s.io; do
            [[ -d $c$top ]] && find "$c$top" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
    done
    [[ -f $WORK/host.sysctls ]] && while IFS== read -r s v; do sysctl -qw "$s=$v" || true; done <"$WORK/host.sysctls"
    # kubelet's log links point into $WORK; then every host path that did not exist before goes, if empty.
    find /var/log/containers -maxdepth 1 -type l -lname "$WORK/*" -delete 2>/dev/null || true
    remove_created_host_paths
    iptables_cleanup
}

# After cluster_down: no process of the tier, nothing mounted under $WORK, no loop device on its files, no
# host path it created, every sysctl kubelet tuned as it was.
check_nothing_left() {
    local left=0
    local ours others
    ours=$(ps -o pgid= $$ | tr -d ' ')
    # Processes naming $WORK, except this script's own process group (its command line names $WORK too).
    others=$(pgrep -f "$WORK" | while read -r pid; do
        [[ $(ps -o pgid= "$pid" 2>/dev/null | tr -d ' ') == "$ours" ]] || ps -o pid=,args= "$pid"; done)
    if [[ -n $others ]]; then echo "kube: processes left: $others" >&2; left=1; fi
    if findmnt -rn -o TARGET | grep -q "^$WORK"; then
        echo "kube: mounts left: $(findmnt -rn -o TARGET | grep "^$WORK")" >&2; left=1
    fi
    check_node_b_gone || left=1
    if losetup -a | grep -qF "$WORK"; then echo "kube: loop devices left: $(losetup -a | grep -F "$WORK")" >&2; left=1; fi
    local p s v
    while read -r p; do
        [[ -e $p ]] && { echo "kube: host path created by the run is left: $p" >&2; left=1; }
    done <"$WORK/host.absent-paths"
    while IFS== read -r s v; do
        [[ $(sysctl -n "$s") == "$v" ]] || { echo "kube: sysctl $s is $(sysctl -n "$s"), was $v" >&2; left=1; }
    done <"$WORK/host.sysctls"
    return $left
}

# The host paths that did not exist before the run go again, if all they hold is what the node's components
# leave: sockets, fifos, empty files and empty directories. Anything else is reported and left alone.
remove_created_host_paths() {
    [[ -f $WORK/host.absent-paths ]] || return 0
    local p
    while read -r p; do
        [[ -e $p || -L $p ]] || continue
        if [[ -d $p ]]; then
            find "$p" \( -type s -o -type p -o \( -type f -empty \) \) -delete 2>/dev/null || true
            find "$p" -depth -type d -empty -delete 2>/dev/null || true
        elif [[ -f $p && ! -s $p ]]; then
            rm -f "$p"
        fi
        [[ ! -e $p ]] || echo "kube: $p was created during the run and is not empty: left in place" >&2
    done <"$WORK/host.absent-paths"
}

# kubelet adds chains of its own (KUBE-KUBELET-CANARY, KUBE-FIREWALL with jumps from INPUT and OUTPUT);
# those that were not there before go, after the rules that jump to them.
kube_chains() { # iptables-command
    local table
    for table in mangle nat filter; do
        "$1" -t "$table" -S 2>/dev/null | awk -v t="$table" '$1 == "-N" && $2 ~ /^KUBE-/ { print t, $2 }'
    done
}

iptables_cleanup() {
    local cmd table chain rule
    for cmd in iptables ip6tables; do
        command -v "$cmd" >/dev/null || continue
        kube_chains "$cmd" | while read -r table chain; do
            grep -qx "$cmd $table $chain" "$WORK/host.chains" 2>/dev/null && continue
            "$cmd" -t "$table" -S | grep -E -- "-j $chain( |\$)" | while read -r rule; do
                read -ra spec <<<"${rule/#-A /}"
                "$cmd" -t "$table" -D "${spec[@]}" 2>/dev/null || true
            done
            "$cmd" -t "$table" -F "$chain" 2>/dev/null || true
            "$cmd" -t "$table" -X "$chain" 2>/dev/null || true
        done
    done
}

source "$here/node-b.sh"
