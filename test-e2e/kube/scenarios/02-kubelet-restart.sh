# kubelet restarted under a running pod: the pod and its container keep running, the mounts stay, and the
# restarted kubelet (which rebuilds its volume state from what it finds) later tears the volume down cleanly.
scenario_kubelet_restart() {
    local dev container
    dev=$(ext4_pod restart "echo before > /data/token && busybox sync")
    container=$(pod_field restart '{.status.containerStatuses[0].containerID}')

    restart_kubelet
    wait_pod_ready restart
    expect_eq "the container after kubelet's restart" "$container" \
        "$(pod_field restart '{.status.containerStatuses[0].containerID}')"
    expect_eq "mounts of the device after kubelet's restart" 2 "$(device_mounts "$dev")"
    # The API shows the pod Ready before the new kubelet has taken it back: exec works once it has.
    wait_until "kubelet to serve exec for the pod again" 60 pod_exec restart sh -c true ||
        kube_fail "kubelet does not serve the running pod after its restart"
    pod_exec restart sh -c 'echo after >> /data/token && busybox sync'

    delete_pod restart
    wait_released restart "$dev"
    expect_eq "the file on the device" "before after" "$(file_on_device "$dev" token | tr '\n' ' ' | sed 's/ $//')"
    delete_volume restart
}
