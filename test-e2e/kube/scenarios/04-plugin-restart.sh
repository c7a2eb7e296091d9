# The blocknode pod replaced under volumes in use, three ways: a redeploy with another rendering while a pod
# runs (the helm-installed release, or the chart's rendering, -> the manifests; the manifests -> the chart's); the DaemonSet's pod deleted while pods mount and unmount; the plugin's
# container killed -9 while they do. Mounts live in the kernel, so running pods keep their volumes; kubelet's
# calls that meet no plugin fail and are retried until the new one registers; nothing is lost or leaked. After
# the redeploy, kubelet holds what NodeGetInfo says under the new rendering: the chart's volume cap and fabric
# topology in CSINode and the node's labels, the manifests' neither.
scenario_plugin_restart() {
    local d1 d2 d3 old other
    d1=$(new_loop_device restart-1 64); d2=$(new_loop_device restart-2 64); d3=$(new_loop_device restart-3 64)
    create_volume restart-1 "$d1" Filesystem ext4 ReadWriteOnce 64
    create_volume restart-2 "$d2" Filesystem ext4 ReadWriteOnce 64
    create_volume restart-3 "$d3" Filesystem ext4 ReadWriteOnce 64
    create_pod user-1 restart-1 Filesystem "echo one > /data/token && busybox sync"
    wait_pod_ready user-1

    # 1. Redeploy with the other rendering.
    other=manifests; [[ $DEPLOYED_RENDERING == manifests ]] && other=chart
    old=$(plugin_pod)
    # Objects helm created carry no last-applied annotation; kubectl apply patches them all the same, after a
    # warning per object, which would only bury the scenario's own lines.
    kc apply -f "$(render_deployment "$other")" 2>&1 >/dev/null | { grep -v 'last-applied-configuration' >&2 || true; }
    replace_plugin_pod_if_unchanged "$old"
    DEPLOYED_RENDERING=$other
    expect_eq "mounts of user-1's device across the redeploy" 2 "$(device_mounts "$d1")"
    expect_eq "user-1's file across the redeploy" one "$(pod_exec user-1 busybox cat /data/token)"
    expect_node_info "$other"

    # 2. The plugin's pod deleted while one pod starts and another stops.
    old=$(plugin_pod)
    kc -n kube-system delete pod "$old" --wait=false >/dev/null
    create_pod user-2 restart-2 Filesystem "echo two > /data/token && busybox sync"
    kc -n "$TEST_NS" delete pod user-1 --wait=false >/dev/null
    wait_plugin_ready
    wait_pod_ready user-2 180
    wait_released restart-1 "$d1" 180
    expect_eq "user-1's file on its device" one "$(file_on_device "$d1" token)"

    # 3. The plugin's container killed -9 while one pod starts and another stops.
    local restarts
    restarts=$(plugin_restarts)
    kill_plugin_container
    create_pod user-3 restart-3 Filesystem "echo three > /data/token && busybox sync"
    kc -n "$TEST_NS" delete pod user-2 --wait=false >/dev/null
    wait_until "kubelet to restart the killed plugin container" 120 plugin_restarted_since "$restarts" ||
        kube_fail "the plugin container was not restarted"
    wait_plugin_ready
    wait_pod_ready user-3 180
    wait_released restart-2 "$d2" 180
    expect_eq "user-2's file on its device" two "$(file_on_device "$d2" token)"

    delete_pod user-3
    wait_released restart-3 "$d3"
    expect_eq "user-3's file on its device" three "$(file_on_device "$d3" token)"
    for v in restart-1 restart-2 restart-3; do delete_volume "$v"; done
}

# A rendering whose pod template equals the running one rolls nothing out; the pod is replaced by hand then,
# so that the plugin restarts either way.
replace_plugin_pod_if_unchanged() { # old pod
    wait_plugin_ready
    if [[ $(plugin_pod) == "$1" ]]; then
        kc -n kube-system delete pod "$1" --wait=false >/dev/null
        wait_until "the plugin pod to be replaced" 60 plugin_pod_replaced "$1" || kube_fail "the plugin pod was not replaced"
        wait_plugin_ready
    fi
}
plugin_pod_replaced() { local p; p=$(plugin_pod); [[ -n $p && $p != "$1" ]]; }

# What kubelet made of NodeGetInfo under the RENDERING now deployed: with the chart's cap and topology
# (deploy.sh), CSINode's allocatable count is the cap (this node has no multipath map of anyone's) and the
# fabric is a topology key and a node label; with the plain manifests, neither. Either way the CSIDriver asks
# kubelet to refresh the count every 60 s (KEP-4876).
expect_node_info() { # rendering
    expect_eq "the CSIDriver's nodeAllocatableUpdatePeriodSeconds" 60 \
        "$(kc get csidriver "$DRIVER" -o jsonpath='{.spec.nodeAllocatableUpdatePeriodSeconds}')"
    if [[ $1 == chart || $1 == release ]]; then
        wait_until "CSINode to carry the chart's cap and topology" 60 csinode_says \
            "$CHART_MAX_VOLUMES [\"fabric\"]" || true
        expect_eq "CSINode's count and topology keys under the chart" "$CHART_MAX_VOLUMES [\"fabric\"]" "$(csinode_info)"
        expect_eq "the node's fabric label" "$CHART_FABRIC" \
            "$(kc get node "$NODE_NAME" -o jsonpath='{.metadata.labels.fabric}')"
    else
        wait_until "CSINode to carry no cap and no topology" 60 csinode_says " " || true
        expect_eq "CSINode's count and topology keys under the manifests" " " "$(csinode_info)"
    fi
}
# "COUNT KEYS"; no keys is empty: a driver that registered again without topology keys has topologyKeys: null,
# which jsonpath prints.
csinode_info() {
    kc get csinode "$NODE_NAME" -o jsonpath='{.spec.drivers[?(@.name=="'"$DRIVER"'")].allocatable.count} {.spec.drivers[?(@.name=="'"$DRIVER"'")].topologyKeys}' |
        sed 's/ null$/ /'
}
csinode_says() { [[ $(csinode_info) == "$1" ]]; }
