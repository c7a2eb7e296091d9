# blocknode deployed into the kube tier's cluster as a user deploys it; sourced by run.sh.
#
# Three renderings of the same deployment:
#   release    helm install of the released chart from the loopback registry (registry.sh), as
#              docs/install.md tells a user, with the monitoring values on (check_monitoring_objects);
#   manifests  the plain manifests of deploy/kubernetes/, applied with kubectl;
#   chart      the chart of deploy/helm/blocknode rendered by deploy/validate's renderer (Helm's own engine).
# Each runs the released image. Only what a user changes for this cluster is changed: the image reference (not
# for the release, whose chart pins it), the kubelet root (this kubelet's --root-dir, as on k0s or microk8s) and
# the state directory (under $WORK, so nothing stays on the host).

DEPLOY=$repo/deploy
# What the chart's renderings (release, chart) set beyond the cluster's paths, as an operator of a SAN with
# fabrics would: a cap on the node's volumes and the node's fabric as topology (the plain manifests keep neither;
# scenario 04 checks both reach CSINode and the node's labels, or neither, after its redeploy).
CHART_MAX_VOLUMES=50
CHART_FABRIC=fab-a

render_deployment() { # manifests|chart -> file
    local rendering=$1 out=$WORK/deploy-$1.yaml
    case $rendering in
        manifests)
            local f
            for f in csidriver serviceaccount daemonset log-level controller-rbac controller; do
                echo "---"
                sed -e "s#registry.example.com/blocknode/blocknode:0.1.0#$PLUGIN_IMAGE#g" \
                    -e "s#/var/lib/kubelet#$WORK/kubelet#g" -e "s#/var/lib/blocknode#$STATE_DIR#g" \
                    "$DEPLOY/kubernetes/$f.yaml"
            done >"$out" ;;
        chart)
            "$DEPLOY_VALIDATE" -deploy "$DEPLOY" -render \
                -set "image.repository=${PLUGIN_IMAGE%:*}" -set-string "image.tag=${PLUGIN_IMAGE##*:}" \
                -set "kubeletRoot=$WORK/kubelet" -set "stateDir=$STATE_DIR" \
                -set "maxVolumesPerNode=$CHART_MAX_VOLUMES" -set "topology.fabric=$CHART_FABRIC" >"$out" ;;
        *) kube_fail "unknown rendering '$rendering' (manifests or chart)" ;;
    esac
    grep -q "$WORK/kubelet" "$out" || kube_fail "the $rendering rendering does not use the kubelet root $WORK/kubelet"
    echo "$out"
}

# helm, with its configuration, cache and data under $WORK (nothing left in root's home) and the cluster's admin.
helm_kc() {
    HELM_CONFIG_HOME=$WORK/helm/config HELM_CACHE_HOME=$WORK/helm/cache HELM_DATA_HOME=$WORK/helm/data \
        timeout 300 "$HELM" --kubeconfig "$WORK/pki/admin.kubeconfig" "$@"
}

# The released chart installed from the registry as docs/install.md says, with this cluster's paths, the
# chart renderings' cap and topology, and the monitoring objects (behind their values; the PrometheusRule needs
# its CRD, which a cluster gets from the Prometheus Operator and this one from a test-only file). The helm
# commands begin with the docs' words (docs/install.md, the getting-started pages), to which the tier adds only
# what this cluster needs: DocsCommandsUnitTest compares them (a doc block marked "checked: kube install_release").
install_release() {
    kc apply -f "$here/monitoring-crds.yaml" >/dev/null
    kc wait --for=condition=Established --timeout=60s crd/prometheusrules.monitoring.coreos.com \
        crd/podmonitors.monitoring.coreos.com >/dev/null ||
        kube_fail "the test-only PrometheusRule and PodMonitor CRDs were not established"
    helm_kc show values "oci://$REGISTRY/blocknode/charts/blocknode" --version "$RELEASE_VERSION" --plain-http \
        >"$WORK/logs/helm-show-values.yaml" 2>&1 ||
        kube_fail "helm show values $CHART_REF --version $RELEASE_VERSION failed: $(tail -5 "$WORK/logs/helm-show-values.yaml")"
    grep -q '^image:' "$WORK/logs/helm-show-values.yaml" ||
        kube_fail "helm show values $CHART_REF shows no image: $(head -5 "$WORK/logs/helm-show-values.yaml")"
    helm_kc install blocknode "oci://$REGISTRY/blocknode/charts/blocknode" --version "$RELEASE_VERSION" -n kube-system \
        --plain-http --set "kubeletRoot=$WORK/kubelet" --set "stateDir=$STATE_DIR" \
        --set "maxVolumesPerNode=$CHART_MAX_VOLUMES" --set "topology.fabric=$CHART_FABRIC" \
        --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true \
        --set monitoring.podMonitor.enabled=true >"$WORK/logs/helm-install.log" 2>&1 ||
        kube_fail "helm install $CHART_REF --version $RELEASE_VERSION failed: $(tail -5 "$WORK/logs/helm-install.log")"
    local image
    image=$(kc -n kube-system get ds blocknode-node -o jsonpath='{.spec.template.spec.containers[?(@.name=="blocknode")].image}')
    [[ $image == "$PLUGIN_IMAGE@sha256:"* ]] ||
        kube_fail "the released chart runs the image $image, not $PLUGIN_IMAGE pinned by digest"
}

# The chart's monitoring objects as the API server holds them: the PrometheusRule's rules pass promtool and are
# as many as deploy/monitoring/rules.yaml's, the dashboard's ConfigMap holds dashboard.json as it is, and the
# PodMonitor finds what a Prometheus must scrape (check_pod_monitor).
check_monitoring_objects() {
    local rules=$WORK/prometheusrule.json promtool=$repo/.tools/bin/promtool
    make --no-print-directory -s -C "$repo" "$promtool" >/dev/null || kube_fail "no promtool (make $promtool)"
    kc -n kube-system get prometheusrule blocknode -o jsonpath='{.spec}' >"$rules" ||
        kube_fail "the chart installed no PrometheusRule blocknode in kube-system"
    local found expected
    found=$("$promtool" check rules "$rules" 2>&1) || kube_fail "promtool check rules of the PrometheusRule read back: $found"
    expected=$("$promtool" check rules "$repo/deploy/monitoring/rules.yaml" 2>&1 | grep -o '[0-9]* rules found')
    [[ $found == *"$expected"* ]] ||
        kube_fail "the PrometheusRule read back has not deploy/monitoring/rules.yaml's $expected: $found"
    kc -n kube-system get configmap blocknode-dashboard -o jsonpath='{.data.blocknode\.json}' >"$WORK/dashboard.json" ||
        kube_fail "the chart installed no ConfigMap blocknode-dashboard in kube-system"
    cmp -s <(sed -e '$a\' "$WORK/dashboard.json") "$repo/deploy/monitoring/dashboard.json" ||
        kube_fail "the dashboard ConfigMap's blocknode.json differs from deploy/monitoring/dashboard.json"
    expect_eq "the dashboard ConfigMap's Grafana label" 1 \
        "$(kc -n kube-system get configmap blocknode-dashboard -o jsonpath='{.metadata.labels.grafana_dashboard}')"
    kube_log "monitoring from the chart: PrometheusRule read back, promtool: $expected; dashboard ConfigMap as deploy/monitoring/dashboard.json"
    wait_until "the PodMonitor's targets to answer" 60 pod_monitor_targets >/dev/null ||
        kube_fail "the chart's PodMonitor: $(pod_monitor_targets 2>&1)"
    kube_log "monitoring from the chart: PodMonitor $(pod_monitor_targets)"
}

# What the Prometheus Operator makes of the chart's PodMonitor, done by hand: its job (<namespace>/<name>) holds
# "blocknode", as the alerts and the dashboard select it; its selector, in its own namespace, picks exactly the node
# plugins' pods, one per node; its endpoint's port is a port of each pod's plugin container; and Prometheus' scrape
# of each pod's IP at that port and path answers the plugin's metrics with that node's blocknode_build_info.
# Prints the targets; fails saying what differs.
pod_monitor_targets() {
    local monitor selector port path pods want pod ip node number targets=()
    monitor=$(kc -n kube-system get podmonitor blocknode -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}} {{with index .spec.podMetricsEndpoints 0}}{{.port}} {{or .path "/metrics"}}{{end}}') ||
        { echo "no PodMonitor blocknode in kube-system"; return 1; }
    read -r selector port path <<<"$monitor"
    [[ $selector == *=* && -n $port ]] || { echo "its selector or endpoint is empty: $monitor"; return 1; }
    # Each selected pod with its IP, node and the plugin container's port of that name.
    pods=$(kc -n kube-system get pods -l "${selector%,}" -o jsonpath="{range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName} {.spec.containers[?(@.name==\"blocknode\")].ports[?(@.name==\"$port\")].containerPort}{\"\\n\"}{end}" | sort)
    want=$(kc -n kube-system get pods -l "$NODE_PLUGIN_PODS" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
    [[ $(awk '{print $1}' <<<"$pods") == "$want" ]] ||
        { echo "its selector ${selector%,} picks [${pods//$'\n'/; }], not the node plugins' pods [${want//$'\n'/ }]"; return 1; }
    while read -r pod ip node number; do
        [[ -n $number ]] || { echo "pod $pod: no IP, or no container port named $port"; return 1; }
        curl -fsS --max-time 10 "http://$ip:$number$path" 2>&1 | grep -q "^blocknode_build_info{.*node=\"$node\"" ||
            { echo "http://$ip:$number$path (pod $pod) answers no blocknode_build_info of node $node"; return 1; }
        targets+=("$ip:$number$path ($node)")
    done <<<"$pods"
    echo "kube-system/blocknode scrapes ${targets[*]}"
}

NODE_PLUGIN_PODS=app.kubernetes.io/name=blocknode,app.kubernetes.io/component=node-plugin

# The plugin's pod on the first node (or NODE) that is not being deleted (a deleted one may linger while it
# terminates).
plugin_pod() { # [node]
    kc -n kube-system get pods -l "$NODE_PLUGIN_PODS" --field-selector "spec.nodeName=${1:-$NODE_NAME}" \
        -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null |
        awk 'NF == 1 { print $1; exit }'
}

# Whether this node's CSINode (or NODE's) lists the driver, read with the command docs/install.md gives an
# operator (every CSINode, a line each: the second node's and the multi-attach scenario's are there too).
driver_registered() { # [node]
    kc get csinode -o jsonpath='{range .items[*]}{.metadata.name}{": "}{.spec.drivers[*].name}{"\n"}{end}' 2>/dev/null |
        awk -v node="${1:-$NODE_NAME}:" -v driver="$DRIVER" '$1 == node { for (i = 2; i <= NF; i++) if ($i == driver) found = 1 }
            END { exit !found }'
}

# The DaemonSet's pod Ready (its liveness probe answered through livenessprobe) and the driver in CSINode
# (registered through node-driver-registrar).
wait_plugin_ready() { # [seconds]
    wait_until "the blocknode DaemonSet to be rolled out" "${1:-180}" \
        kc -n kube-system rollout status ds/blocknode-node --timeout=2s ||
        kube_fail "blocknode DaemonSet not ready: $(kc -n kube-system describe pods -l "$NODE_PLUGIN_PODS" | tail -15)"
    wait_until "CSINode $NODE_NAME to list $DRIVER" 60 driver_registered ||
        kube_fail "the driver did not register with kubelet (CSINode: $(kc get csinode "$NODE_NAME" -o yaml 2>&1 | tail -8))"
    if node_b_pid >/dev/null; then
        wait_until "CSINode $NODE_B_NAME to list $DRIVER" 60 driver_registered "$NODE_B_NAME" ||
            kube_fail "the driver did not register with node B's kubelet (log: $WORK/logs/kubelet-b.log)"
    fi
    # What docs/install.md has an operator look for after an install: the node plugin's pod 3/3 Running.
    local pods
    pods=$(kc -n kube-system get pods -l app.kubernetes.io/name=blocknode -o wide 2>&1)
    grep -Eq '^blocknode-node-[^ ]+ +3/3 +Running ' <<<"$pods" || kube_fail "the node plugin's pod is not 3/3 Running: $pods"
    # The controller side: blocknode --mode controller and the external-attacher, which must reach the API
    # server (its in-cluster config) and hold its leader Lease before it marks any attachment.
    wait_until "the blocknode controller Deployment to be rolled out" 120 \
        kc -n kube-system rollout status deploy/blocknode-controller --timeout=2s ||
        kube_fail "blocknode controller not ready: $(kc -n kube-system describe pods -l app.kubernetes.io/component=controller | tail -15)"
    wait_until "the external-attacher to lead" 60 attacher_leads ||
        kube_fail "the external-attacher holds no Lease: $(kc -n kube-system logs deploy/blocknode-controller -c csi-attacher --tail=15 2>&1)"
    # What kubelet's liveness probe GETs (livenessprobe on the host network, calling the plugin's Probe).
    wait_until "livenessprobe's /healthz to answer 200" 60 curl -fsS -o /dev/null http://127.0.0.1:9808/healthz ||
        kube_fail "livenessprobe's /healthz does not answer 200: $(curl -sS http://127.0.0.1:9808/healthz 2>&1)"
}

# The attacher's leader-election Lease (named after the driver) has a holder.
attacher_leads() {
    [[ -n $(kc -n kube-system get lease "external-attacher-leader-${DRIVER//./-}" \
        -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) ]]
}

deploy_blocknode() { # release|manifests|chart
    local port
    for port in 9808 9810; do
        port_free "$port" || kube_fail "port $port (blocknode's DaemonSet on the host network) is in use"
    done
    # The DaemonSet mounts the host's udev database (type Directory): a node without udevd has none.
    mkdir -p /run/udev "$STATE_DIR"
    local file
    if [[ $1 == release ]]; then
        install_release
        wait_plugin_ready
        check_monitoring_objects
    else
        file=$(render_deployment "$1")
        kc apply -f "$file" >/dev/null
        wait_plugin_ready
    fi
    kc create namespace "$TEST_NS" --dry-run=client -o yaml | kc apply -f - >/dev/null
    DEPLOYED_RENDERING=$1
}

# Pods first (kubelet unpublishes and unstages through the plugin), then claims and volumes, then the plugin.
# Fails if anything of a volume is left on the node: a mount of a CSI path or a staging record.
teardown_volumes_and_plugin() {
    component_running apiserver || return 0
    # Pods bound to a node without a kubelet (a failed multi-attach scenario's) would never finish terminating;
    # both real nodes release theirs.
    local pod
    for pod in $(kc -n "$TEST_NS" get pods -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' 2>/dev/null |
            awk -v a="$NODE_NAME" -v b="$NODE_B_NAME" '$2 != "" && $2 != a && $2 != b { print $1 }'); do
        kc -n "$TEST_NS" delete pod "$pod" --grace-period=0 --force >/dev/null 2>&1 || true
    done
    kc -n "$TEST_NS" delete pods --all --wait=true --timeout=120s >/dev/null 2>&1 || true
    wait_until "CSI mounts to be gone" 90 ! csi_mounts_left ||
        echo "kube: left mounted: $(csi_mount_targets; csi_mount_targets_b)" >&2
    local leaked_mounts leaked_records
    leaked_mounts=$(csi_mount_targets; csi_mount_targets_b)
    leaked_records=$(ls "$STATE_DIR/volumes" "$NODE_B_DIR/blocknode-state/volumes" 2>/dev/null | grep -c '\.pb$' || true)
    # Detached by the attach/detach controller through the attacher, once kubelet reports the volumes unmounted.
    wait_until "VolumeAttachments to be gone" 90 no_volume_attachments ||
        echo "kube: left attached: $(kc get volumeattachments -o name 2>&1)" >&2
    local leaked_attachments
    leaked_attachments=$(kc get volumeattachments -o name 2>/dev/null)
    kc -n "$TEST_NS" delete pvc --all --wait=true --timeout=60s >/dev/null 2>&1 || true
    kc delete pv --all --wait=true --timeout=60s >/dev/null 2>&1 || true
    kc -n kube-system delete deploy blocknode-controller --wait=true --timeout=90s >/dev/null 2>&1 || true
    kc -n kube-system delete ds blocknode-node --wait=true --timeout=90s >/dev/null 2>&1 || true
    wait_until "the blocknode pod to go" 90 ! plugin_pod_exists || true
    kc delete csidriver "$DRIVER" >/dev/null 2>&1 || true
    [[ -z $leaked_mounts ]] || kube_fail "after every pod was deleted, still mounted: $leaked_mounts"
    [[ -z $leaked_attachments ]] || kube_fail "after every pod was deleted, still attached: $leaked_attachments"
    ((leaked_records == 0)) || kube_fail "after every pod was deleted, $leaked_records staging records are left in $STATE_DIR"
}

no_volume_attachments() { [[ -z $(kc get volumeattachments -o name 2>/dev/null) ]]; }

plugin_restarts() {
    kc -n kube-system get pod "$(plugin_pod)" \
        -o jsonpath='{.status.containerStatuses[?(@.name=="blocknode")].restartCount}'
}
plugin_restarted_since() { (( $(plugin_restarts) > $1 )); }

# SIGKILL to the plugin's container through containerd, as an OOM kill or a crash would end it.
kill_plugin_container() {
    local id
    id=$(kc -n kube-system get pod "$(plugin_pod)" \
        -o jsonpath='{.status.containerStatuses[?(@.name=="blocknode")].containerID}')
    ctr -a "$CSOCK" -n k8s.io tasks kill -s SIGKILL "${id#containerd://}" >/dev/null
}

plugin_pod_exists() { [[ -n $(kc -n kube-system get pods -l "$NODE_PLUGIN_PODS" -o name 2>/dev/null) ]]; }

# Mounts kubelet made for CSI volumes: publications under pods/, staging and block paths under plugins/kubernetes.io/csi.
csi_mount_targets() {
    findmnt -rn -o TARGET | grep -E "^$WORK/kubelet/(pods/.*/volumes/kubernetes.io~csi/|plugins/kubernetes.io/csi/)" || true
}
csi_mounts_left() { [[ -n $(csi_mount_targets; csi_mount_targets_b) ]]; }

# Resident memory of every component now, in MiB (the plugin, its sidecars and the controller side found by
# their command lines inside their containers).
report_rss() {
    local line="" name pid
    for name in etcd apiserver controller-manager scheduler containerd kubelet containerd-b kubelet-b; do
        pid=$(cat "$WORK/run/$name.pid" 2>/dev/null) || continue
        line+="$name $(rss_mib "$pid"), "
    done
    local pattern
    for pattern in "blocknode:-jar /app/blocknode.jar --endpoint" "registrar:csi-node-driver-registrar" \
                   "livenessprobe:livenessprobe" "blocknode-controller:-jar /app/blocknode.jar --mode=controller" \
                   "attacher:csi-attacher --csi-address"; do
        pid=$(pgrep -f -- "${pattern#*:}" | head -1) || continue
        line+="${pattern%%:*} $(rss_mib "$pid"), "
    done
    kube_log "RSS (MiB): ${line%, }"
}
rss_mib() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }

dump_diagnostics() {
    echo "---- pods" >&2; kc get pods -A -o wide >&2 2>&1 || true
    echo "---- events" >&2; kc get events -A --sort-by=.lastTimestamp 2>&1 | tail -30 >&2 || true
    echo "---- blocknode" >&2; kc -n kube-system logs -l "$NODE_PLUGIN_PODS" -c blocknode --tail=40 >&2 2>&1 || true
    echo "---- blocknode controller side" >&2
    kc -n kube-system logs deploy/blocknode-controller --all-containers --tail=30 >&2 2>&1 || true
    echo "---- volumeattachments" >&2; kc get volumeattachments -o wide >&2 2>&1 || true
    echo "---- kubelet" >&2; tail -40 "$WORK/logs/kubelet.log" >&2 || true
}

# A field of the blocknode container in the DaemonSet (args, env), as JSON.
plugin_container_field() { # field
    kc -n kube-system get ds blocknode-node \
        -o jsonpath="{.spec.template.spec.containers[?(@.name==\"blocknode\")].$1}"
}

# Replaces a field of the blocknode container (JSON; "null" removes it) and waits for the plugin rolled out.
set_plugin_container_field() { # field json
    local index op=replace
    index=$(kc -n kube-system get ds blocknode-node -o jsonpath='{.spec.template.spec.containers[*].name}' |
        tr ' ' '\n' | grep -nx blocknode | cut -d: -f1)
    [[ -n $index ]] || kube_fail "the DaemonSet blocknode-node has no container blocknode"
    [[ -n $(plugin_container_field "$1") ]] || op=add
    local patch="[{\"op\": \"$op\", \"path\": \"/spec/template/spec/containers/$((index - 1))/$1\", \"value\": $2}]"
    [[ $2 == null ]] && patch="[{\"op\": \"remove\", \"path\": \"/spec/template/spec/containers/$((index - 1))/$1\"}]"
    kc -n kube-system patch ds blocknode-node --type=json -p "$patch" >/dev/null ||
        kube_fail "the DaemonSet's $1 could not be replaced"
    wait_plugin_ready
}
