# Access modes on one node: two pods share a ReadWriteOnce claim (one staging, two publications, both see
# each other's writes); a ReadWriteOncePod claim in use is refused to a second pod by the scheduler, which
# schedules it as soon as the first pod is gone.
scenario_sharing() {
    local dev dev2
    dev=$(new_loop_device shared-rwo 64)
    create_volume shared-rwo "$dev" Filesystem ext4 ReadWriteOnce 64
    create_pod share-a shared-rwo Filesystem "echo a > /data/a && busybox sync"
    create_pod share-b shared-rwo Filesystem "echo b > /data/b && busybox sync"
    wait_pod_ready share-a
    wait_pod_ready share-b
    expect_eq "mounts of the shared device (one staging, two publications)" 3 "$(device_mounts "$dev")"
    expect_eq "what pod b reads of pod a's file" a "$(pod_exec share-b busybox cat /data/a)"
    expect_eq "what pod a reads of pod b's file" b "$(pod_exec share-a busybox cat /data/b)"
    delete_pod share-a
    expect_eq "mounts once pod a is gone (staging and pod b's publication)" 2 "$(device_mounts "$dev")"
    expect_eq "pod b's volume after pod a is gone" a "$(pod_exec share-b busybox cat /data/a)"
    delete_pod share-b
    wait_released shared-rwo "$dev"
    delete_volume shared-rwo

    dev2=$(new_loop_device shared-rwop 64)
    create_volume shared-rwop "$dev2" Filesystem ext4 ReadWriteOncePod 64
    create_pod single-a shared-rwop Filesystem "echo a > /data/a && busybox sync"
    wait_pod_ready single-a
    create_pod single-b shared-rwop Filesystem "true"
    wait_until "the scheduler to refuse pod single-b" 60 pod_unschedulable single-b ||
        kube_fail "a second pod on a ReadWriteOncePod claim was not refused: $(pod_field single-b '{.status}')"
    expect_eq "mounts of the ReadWriteOncePod device (one pod only)" 2 "$(device_mounts "$dev2")"
    delete_pod single-a
    wait_pod_ready single-b
    expect_eq "what pod single-b reads once it has the claim" a "$(pod_exec single-b busybox cat /data/a)"
    delete_pod single-b
    wait_released shared-rwop "$dev2"
    delete_volume shared-rwop
}

pod_unschedulable() { # pod
    [[ $(pod_field "$1" '{.status.conditions[?(@.type=="PodScheduled")].reason}') == Unschedulable ]] &&
        pod_field "$1" '{.status.conditions[?(@.type=="PodScheduled")].message}' | grep -q ReadWriteOncePod
}
