# A drain: `kubectl drain` of the second node while a pod there has a ReadWriteOnce volume in use. The pod is
# evicted (the eviction API, as drain does for every pod but the DaemonSet's), kubelet unpublishes and unstages
# the volume through that node's blocknode, the attach/detach controller detaches it; the node ends cordoned with
# nothing staged or mounted, its plugin still running; then it is uncordoned.

scenario_drain() {
    local dev token="drain-$RANDOM$RANDOM" out
    dev=$(new_loop_device drain 64)
    create_volume drain "$dev" Filesystem ext4 ReadWriteOnce 64
    create_pod drained drain Filesystem "echo $token > /data/token && busybox sync" false "$NODE_B_NAME"
    wait_pod_ready drained 120
    expect_eq "attachments while pod drained runs" "$NODE_B_NAME true" "$(attachments_of drain)"
    expect_eq "staging records of drain on $NODE_B_NAME" 1 "$(staging_records_b drain)"

    # --force: the pod has no controller (a user's would have one, which recreates it elsewhere).
    out=$(kc drain "$NODE_B_NAME" --ignore-daemonsets --force --timeout=120s 2>&1) ||
        kube_fail "kubectl drain $NODE_B_NAME failed: $out"
    grep -qF "evicting pod $TEST_NS/drained" <<<"$out" || kube_fail "drain did not evict pod drained: $out"
    expect_eq "node $NODE_B_NAME cordoned" true "$(kc get node "$NODE_B_NAME" -o jsonpath='{.spec.unschedulable}')"
    kc -n "$TEST_NS" get pod drained >/dev/null 2>&1 && kube_fail "pod drained is still there after the drain"
    wait_until "volume drain to be released on $NODE_B_NAME" 90 released_b drain "$dev" ||
        kube_fail "volume drain not released on $NODE_B_NAME: $(device_mounts_b "$dev") mounts, $(staging_records_b drain) records"
    wait_detached drain
    [[ -n $(kc -n kube-system get pods -l "$NODE_PLUGIN_PODS" --field-selector "spec.nodeName=$NODE_B_NAME" \
        -o jsonpath='{.items[?(@.status.phase=="Running")].metadata.name}') ]] ||
        kube_fail "the drain took the plugin off $NODE_B_NAME"

    kc uncordon "$NODE_B_NAME" >/dev/null
    expect_eq "node $NODE_B_NAME uncordoned" "" "$(kc get node "$NODE_B_NAME" -o jsonpath='{.spec.unschedulable}')"
    expect_eq "pod drained's file on the device" "$token" "$(file_on_device "$dev" token)"
    delete_volume drain
}
