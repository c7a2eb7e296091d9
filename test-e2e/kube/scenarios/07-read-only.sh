# A claim mounted read-only (the pod's persistentVolumeClaim.readOnly): kubelet asks for a read-only
# publication; the pod reads what is there, every write fails with EROFS, and the publication is read-only on
# the node itself, not only in the pod's container.
scenario_read_only() {
    local dev out
    dev=$(new_loop_device readonly 64)
    create_volume readonly "$dev" Filesystem ext4 ReadWriteOnce 64
    create_pod ro-writer readonly Filesystem "echo written-before > /data/token && busybox sync"
    wait_pod_ready ro-writer
    delete_pod ro-writer
    wait_released readonly "$dev"

    create_pod ro-reader readonly Filesystem "true" true
    wait_pod_ready ro-reader
    expect_eq "what the read-only pod reads" written-before "$(pod_exec ro-reader busybox cat /data/token)"
    if out=$(pod_exec ro-reader sh -c 'echo x > /data/new' 2>&1); then
        kube_fail "a write through the read-only claim succeeded"
    fi
    [[ $out == *"Read-only file system"* ]] || kube_fail "the write failed, but not with EROFS: $out"
    local options
    options=$(findmnt -rn -o OPTIONS --target "$WORK/kubelet/pods/$(pod_field ro-reader '{.metadata.uid}')/volumes/kubernetes.io~csi/readonly/mount")
    # The host's copy of the plugin's bind (made in its container, propagated through the Bidirectional mount
    # of the kubelet root): a flag set by a remount after the bind would not have propagated here.
    [[ ,$options, == *,ro,* ]] || kube_fail "the publication is not mounted read-only on the node: $options"
    delete_pod ro-reader
    wait_released readonly "$dev"
    [[ -z $(file_on_device "$dev" new) ]] || kube_fail "the read-only pod's write reached the device"
    delete_volume readonly
}
