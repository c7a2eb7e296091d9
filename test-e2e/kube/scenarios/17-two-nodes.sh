# A ReadWriteOnce volume moves between two real nodes (the second one: node-b.sh): a pod on the first node writes,
# is deleted; a pod on the second node on the same claim starts once the attach/detach controller has moved the
# VolumeAttachment there, blocknode on that node stages and publishes, and the pod reads the first pod's data. While
# it runs, a pod on the first node on the claim is refused (Multi-Attach / Waiting for detach) and nothing is staged
# or mounted there. The nodes share the kernel: the loop device is visible on both, as a LUN on a SAN.

scenario_two_nodes() {
    local dev token="a-$RANDOM$RANDOM" token_b="b-$RANDOM$RANDOM"
    dev=$(new_loop_device two-nodes 64)
    create_volume two-nodes "$dev" Filesystem ext4 ReadWriteOnce 64

    # Node A writes, and lets go.
    create_pod writer two-nodes Filesystem "echo $token > /data/token && busybox sync" false "$NODE_NAME"
    wait_pod_ready writer
    expect_eq "attachments while pod writer runs" "$NODE_NAME true" "$(attachments_of two-nodes)"
    expect_eq "staging records of two-nodes on $NODE_NAME" 1 "$(staging_records two-nodes)"
    expect_eq "staging records of two-nodes on $NODE_B_NAME while $NODE_NAME holds it" 0 "$(staging_records_b two-nodes)"
    delete_pod writer
    wait_released two-nodes "$dev"

    # Node B takes it over: detached from A, attached to B, staged and published by B's blocknode.
    create_pod reader two-nodes Filesystem "cat /data/token; echo $token_b > /data/token-b && busybox sync" \
        false "$NODE_B_NAME"
    wait_until "PV two-nodes to move to $NODE_B_NAME" 120 attached_to two-nodes "$NODE_B_NAME" ||
        kube_fail "the volume did not move to $NODE_B_NAME: $(attachments_of two-nodes | tr '\n' ';')"
    wait_pod_ready reader 120
    expect_eq "what pod reader on $NODE_B_NAME read of pod writer's file" "$token" \
        "$(kc -n "$TEST_NS" logs reader 2>&1 | head -1)"
    expect_eq "staging records of two-nodes on $NODE_B_NAME" 1 "$(staging_records_b two-nodes)"
    [[ $(device_mounts_b "$dev") -ge 2 ]] ||
        kube_fail "node B has $(device_mounts_b "$dev") mounts of $dev, expected the staging and the publication"
    expect_eq "staging records of two-nodes on $NODE_NAME while $NODE_B_NAME holds it" 0 "$(staging_records two-nodes)"
    expect_eq "mounts of $dev on $NODE_NAME while $NODE_B_NAME holds it" 0 "$(device_mounts "$dev")"

    # Node A again, while B holds it: refused before anything reaches node A.
    create_pod second two-nodes Filesystem "true" false "$NODE_NAME"
    wait_until "the Multi-Attach refusal on pod second" 60 multi_attach_refused second two-nodes reader ||
        kube_fail "no Multi-Attach event for pod second: $(kc -n "$TEST_NS" get events --field-selector involvedObject.name=second 2>&1 | tail -5)"
    expect_eq "attachments while $NODE_B_NAME holds the volume" "$NODE_B_NAME true" "$(attachments_of two-nodes)"
    expect_eq "phase of pod second" Pending "$(pod_field second '{.status.phase}')"
    expect_eq "staging records of two-nodes on $NODE_NAME" 0 "$(staging_records two-nodes)"
    expect_eq "mounts of $dev on $NODE_NAME" 0 "$(device_mounts "$dev")"
    delete_pod second

    delete_pod reader
    wait_until "volume two-nodes to be released on $NODE_B_NAME" 90 released_b two-nodes "$dev" ||
        kube_fail "volume two-nodes not released on $NODE_B_NAME: $(device_mounts_b "$dev") mounts, $(staging_records_b two-nodes) records"
    wait_detached two-nodes
    expect_eq "the file pod reader wrote on $NODE_B_NAME" "$token_b" "$(file_on_device "$dev" token-b)"
    delete_volume two-nodes
}
