# A node lost (non-graceful node shutdown): a pod on the second node writes a ReadWriteOnce raw block volume, then every
# process of that node is killed -9 at once (kubelet, containerd, the plugin, the pod), its mounts and staging
# record left as a node cut off with its kernel still up leaves them. Once the node is NotReady it is tainted
# node.kubernetes.io/out-of-service: the taint evicts the pod, the pod GC force-deletes it, the attach/detach
# controller detaches the volume from the lost node without its 6-minute wait, and a pod on the first node starts
# on the claim with the lost pod's data. Then the lost node comes back in the same namespaces: its kubelet
# reconstructs the volume from the pod's directory and its blocknode unpublishes and unstages it there, while the
# first node's pod goes on writing the same device; the taint is removed.

scenario_node_lost() {
    local dev token="lost-$RANDOM$RANDOM"
    dev=$(new_loop_device node-lost 64)
    # Raw block: the nodes share one kernel, so a filesystem the lost node left mounted would be the same
    # superblock, holding the device, that the first node then finds in use (its stage refused FAILED_PRECONDITION
    # until the lost node lets go); two machines on a SAN each have their own. A block publication is a bind mount
    # of the device node, which claims nothing.
    create_volume node-lost "$dev" Block "" ReadWriteOnce 64

    create_pod doomed node-lost Block "echo $token | busybox dd of=/dev/xvda bs=512 count=1 conv=fsync" \
        false "$NODE_B_NAME"
    wait_pod_ready doomed 120
    local uid
    uid=$(pod_field doomed '{.metadata.uid}')
    lost_pod_containers "$uid" >/dev/null || kube_fail "node B's containerd lists no container of pod doomed ($uid)"
    expect_eq "attachments while pod doomed runs" "$NODE_B_NAME true" "$(attachments_of node-lost)"
    expect_eq "staging records of node-lost on $NODE_B_NAME" 1 "$(staging_records_b node-lost)"

    # The power cut.
    power_cut_node_b
    kube_log "node $NODE_B_NAME lost: every process killed -9, its namespaces (and mounts) kept"
    expect_eq "staging records of node-lost on the lost node" 1 "$(staging_records_b node-lost)"
    [[ $(device_mounts_b "$dev") -ge 1 ]] ||
        kube_fail "the lost node has no mount of $dev left, expected its publication"
    local lost=$SECONDS
    wait_until "node $NODE_B_NAME to be NotReady" 90 node_not_ready "$NODE_B_NAME" ||
        kube_fail "node $NODE_B_NAME is still Ready: $(node_ready_status "$NODE_B_NAME")"
    kube_log "node $NODE_B_NAME $(node_ready_status "$NODE_B_NAME") after $((SECONDS - lost)) s"
    # Without the taint nothing moves: the pod stays, the volume stays attached there.
    expect_eq "attachments of the NotReady node before the taint" "$NODE_B_NAME true" "$(attachments_of node-lost)"

    kc taint node "$NODE_B_NAME" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute >/dev/null
    local tainted=$SECONDS
    wait_until "pod doomed to be force-deleted" 90 ! kc -n "$TEST_NS" get pod doomed ||
        kube_fail "pod doomed was not deleted: $(pod_field doomed '{.metadata.deletionTimestamp} {.status.phase}')"
    kc -n "$TEST_NS" get events --field-selector involvedObject.name=doomed,reason=TaintManagerEviction \
        -o jsonpath='{.items[*].message}' | grep -q . ||
        kube_fail "no TaintManagerEviction event on pod doomed: $(kc -n "$TEST_NS" get events --field-selector involvedObject.name=doomed 2>&1 | tail -5)"
    wait_until "PV node-lost to be force-detached from $NODE_B_NAME" 90 detached node-lost ||
        kube_fail "PV node-lost is still attached: $(attachments_of node-lost | tr '\n' ';')"
    kube_log "pod force-deleted and volume detached $((SECONDS - tainted)) s after the taint"
    # The lost node kept everything: nothing there has been asked to let go.
    expect_eq "staging records of node-lost on the lost node after the detach" 1 "$(staging_records_b node-lost)"

    # The first node takes over, reads the lost pod's data and keeps writing while the lost node comes back.
    create_pod survivor node-lost Block "busybox dd if=/dev/xvda bs=512 count=1 2>/dev/null | busybox head -1
        i=0; while :; do i=\$((i + 1)); echo \$i | busybox dd of=/dev/xvda bs=512 seek=1 count=1 conv=fsync 2>/dev/null
        sleep 0.5; done &" false "$NODE_NAME"
    wait_pod_ready survivor 120
    expect_eq "what pod survivor read of the lost pod's file" "$token" "$(kc -n "$TEST_NS" logs survivor 2>&1 | head -1)"
    expect_eq "attachments while pod survivor runs" "$NODE_NAME true" "$(attachments_of node-lost)"
    expect_eq "staging records of node-lost on $NODE_NAME" 1 "$(staging_records node-lost)"
    local container
    container=$(pod_field survivor '{.status.containerStatuses[0].containerID}')

    # The lost node comes back, in the namespaces that kept its mounts.
    up_containerd_b
    up_kubelet_b
    wait_until "node $NODE_B_NAME to be Ready again" 120 kc wait --for=condition=Ready "node/$NODE_B_NAME" --timeout=2s ||
        kube_fail "node $NODE_B_NAME is not Ready again (log: $WORK/logs/kubelet-b.log)"
    wait_until "volume node-lost to be released on the returned node" 180 released_b node-lost "$dev" ||
        kube_fail "the returned node still holds node-lost: $(device_mounts_b "$dev") mounts of $dev in its namespace, $(staging_records_b node-lost) staging records; kubelet B: $(grep -E 'node-lost|Reconstruct|orphan' "$WORK/logs/kubelet-b.log" | tail -5)"
    kc taint node "$NODE_B_NAME" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute- >/dev/null
    wait_plugin_ready
    kube_log "the returned node unpublished and unstaged node-lost; out-of-service taint removed"

    # The first node's use of the device was not touched.
    expect_eq "pod survivor's phase" Running "$(pod_field survivor '{.status.phase}')"
    expect_eq "pod survivor's container" "$container" "$(pod_field survivor '{.status.containerStatuses[0].containerID}')"
    expect_eq "attachments after the lost node's cleanup" "$NODE_NAME true" "$(attachments_of node-lost)"
    expect_eq "staging records of node-lost on $NODE_NAME" 1 "$(staging_records node-lost)"
    [[ $(device_mounts "$dev") -ge 1 ]] || kube_fail "$NODE_NAME has no mount of $dev, expected its publication"
    local before after
    before=$(survivor_count)
    wait_until "pod survivor to go on writing" 30 survivor_wrote_past "$before" ||
        kube_fail "pod survivor stopped writing at $before"
    after=$(survivor_count)

    delete_pod survivor
    wait_released node-lost "$dev"
    wait_detached node-lost
    expect_eq "the lost pod's block on the device" "$token" "$(device_block "$dev" 0)"
    local last
    last=$(device_block "$dev" 1)
    ((last >= after)) 2>/dev/null || kube_fail "pod survivor's count on the device: '$last', expected $after or more"
    # The lost pod's containers and sandbox, dead since the cut: removed by the returned kubelet's garbage
    # collection (every minute), the sandbox's network torn down with it.
    wait_until "the lost pod's containers to be removed on $NODE_B_NAME" 120 ! lost_pod_containers "$uid" ||
        kube_fail "node B's containerd still has the lost pod's containers: $(lost_pod_containers "$uid" | tr '\n' ' ')"
    delete_volume node-lost
}

# The containers (the sandbox's too) of the pod with UID in node B's containerd, one id a line; fails when none.
lost_pod_containers() { # uid
    "$RUNTIME_BIN/ctr" -a "$CSOCK_B" -n k8s.io containers ls -q "labels.\"io.kubernetes.pod.uid\"==$1" | grep .
}
node_ready_status() { # node
    kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'
}
node_not_ready() { [[ $(node_ready_status "$1") == Unknown || $(node_ready_status "$1") == False ]]; } # node
survivor_count() { pod_exec survivor sh -c 'busybox dd if=/dev/xvda bs=512 skip=1 count=1 2>/dev/null | busybox head -1'; }
survivor_wrote_past() { (($(survivor_count) > $1)); } # count
