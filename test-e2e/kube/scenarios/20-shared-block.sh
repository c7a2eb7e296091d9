# One raw block volume shared by pods on both nodes at once (ReadWriteMany, volumeMode Block), as a cluster
# filesystem or a database with its own locking uses a LUN: the attach/detach controller attaches it to both nodes
# (no Multi-Attach refusal), blocknode on each node stages and publishes it in that node's namespace, and each pod
# writes its own region with O_DIRECT and reads the other's from the device (O_DIRECT on both sides: the nodes share
# a kernel here, so a read through the page cache could be served a write of the other node's without it ever
# reaching the device). Deletion unpublishes and unstages on both nodes and detaches from both.

# sh in a pod: write TOKEN into 4 KiB block MINE of /dev/xvda with O_DIRECT (a failed write is logged), then read
# block THEIRS with O_DIRECT until the other pod's token is there, and log it.
shared_block_script() { # token mine theirs
    echo "echo $1 | busybox dd of=/dev/xvda bs=4096 seek=$2 count=1 conv=sync,fsync oflag=direct 2>/dev/null ||
        echo write failed
    while :; do
        got=\$(busybox dd if=/dev/xvda bs=4096 skip=$3 count=1 iflag=direct 2>/dev/null | busybox tr -d '\\0' | busybox head -1)
        [ -n \"\$got\" ] && break; sleep 0.2
    done
    echo \"read \$got\""
}

scenario_shared_block() {
    local dev token_a="sa-$RANDOM$RANDOM" token_b="sb-$RANDOM$RANDOM"
    dev=$(new_loop_device shared-block 64)
    create_volume shared-block "$dev" Block "" ReadWriteMany 64

    # Both at once: neither pod waits for the other's node to let go.
    create_pod sharer-a shared-block Block "$(shared_block_script "$token_a" 1 2)" false "$NODE_NAME"
    create_pod sharer-b shared-block Block "$(shared_block_script "$token_b" 2 1)" false "$NODE_B_NAME"
    wait_pod_ready sharer-a 120
    wait_pod_ready sharer-b 120
    wait_until "each pod to read the other's block" 60 both_read_shared_block ||
        kube_fail "the pods did not read each other's block: sharer-a: $(kc -n "$TEST_NS" logs sharer-a 2>&1 | tail -2); sharer-b: $(kc -n "$TEST_NS" logs sharer-b 2>&1 | tail -2)"
    expect_eq "what pod sharer-a on $NODE_NAME read of the volume" "read $token_b" "$(kc -n "$TEST_NS" logs sharer-a)"
    expect_eq "what pod sharer-b on $NODE_B_NAME read of the volume" "read $token_a" "$(kc -n "$TEST_NS" logs sharer-b)"

    # In the API: both Running, attached to both nodes, no refusal.
    expect_eq "phases of pods sharer-a and sharer-b" "Running Running" \
        "$(pod_field sharer-a '{.status.phase}') $(pod_field sharer-b '{.status.phase}')"
    expect_eq "attachments of shared-block" "$(printf '%s true\n' "$NODE_NAME" "$NODE_B_NAME" | sort)" \
        "$(attachments_of shared-block | sort)"
    expect_eq "FailedAttachVolume events (Multi-Attach) of the sharers" "" \
        "$(kc -n "$TEST_NS" get events --field-selector reason=FailedAttachVolume \
            -o jsonpath='{range .items[*]}{.involvedObject.name}: {.message}{"\n"}{end}' | grep '^sharer-' || true)"
    # On each node: its own staging record, the device's staging and publication in its own mount namespace.
    expect_eq "staging records of shared-block on $NODE_NAME" 1 "$(staging_records shared-block)"
    expect_eq "staging records of shared-block on $NODE_B_NAME" 1 "$(staging_records_b shared-block)"
    [[ $(device_mounts "$dev") -ge 1 && $(device_mounts_b "$dev") -ge 1 ]] ||
        kube_fail "mounts of $dev: $(device_mounts "$dev") on $NODE_NAME, $(device_mounts_b "$dev") on $NODE_B_NAME; expected each node's publication"
    kube_log "shared-block on both nodes: attached to both, a record and $(device_mounts "$dev") and $(device_mounts_b "$dev") mounts of $dev on each, each pod read the other's block (O_DIRECT)"

    kc -n "$TEST_NS" delete pod sharer-a sharer-b --wait=true --timeout=120s >/dev/null ||
        kube_fail "pods sharer-a and sharer-b were not deleted"
    wait_released shared-block "$dev"
    wait_until "volume shared-block to be released on $NODE_B_NAME" 90 released_b shared-block "$dev" ||
        kube_fail "volume shared-block not released on $NODE_B_NAME: $(device_mounts_b "$dev") mounts, $(staging_records_b shared-block) records"
    wait_detached shared-block
    expect_eq "block 1 of the device (pod sharer-a's)" "$token_a" "$(device_block_direct "$dev" 1)"
    expect_eq "block 2 of the device (pod sharer-b's)" "$token_b" "$(device_block_direct "$dev" 2)"
    delete_volume shared-block
}

both_read_shared_block() {
    [[ $(kc -n "$TEST_NS" logs sharer-a 2>/dev/null) == "read "* && $(kc -n "$TEST_NS" logs sharer-b 2>/dev/null) == "read "* ]]
}
