# A pod force-deleted while kubelet is down: the API forgets it at once, the node does not. When kubelet comes
# back it finds the pod's directory, reconstructs the volume from the mounts and tears it down: the container
# is stopped, the volume unpublished and unstaged, the pod's directory removed.
scenario_orphan_reconstruction() {
    local dev uid
    dev=$(ext4_pod orphan "echo orphan > /data/token && busybox sync")
    uid=$(pod_field orphan '{.metadata.uid}')

    stop_component kubelet 30
    kc -n "$TEST_NS" delete pod orphan --force --grace-period=0 >/dev/null 2>&1
    expect_eq "mounts of the device while kubelet is down" 2 "$(device_mounts "$dev")"
    up_kubelet
    wait_node_ready
    wait_released orphan "$dev" 120
    wait_until "the orphaned pod's directory to be removed" 60 ! test -e "$WORK/kubelet/pods/$uid" ||
        kube_fail "kubelet left the orphaned pod's directory $WORK/kubelet/pods/$uid"
    wait_until "the orphaned pod's containers to be removed" 60 ! pod_has_containers "$uid" ||
        kube_fail "containers of the orphaned pod are left in containerd"
    expect_eq "the file on the device" orphan "$(file_on_device "$dev" token)"
    delete_volume orphan
}

pod_has_containers() { # uid
    ctr -a "$CSOCK" -n k8s.io containers ls "labels.\"io.kubernetes.pod.uid\"==$1" -q 2>/dev/null | grep -q .
}
