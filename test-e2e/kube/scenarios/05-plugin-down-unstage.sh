# blocknode down while a pod using a volume is deleted: kubelet stops the container but cannot unpublish or
# unstage without the plugin, so the pod stays (terminating) and the volume stays mounted; once the plugin is
# back and registered, kubelet's retries succeed: the volume is released and the pod goes.
scenario_plugin_down_unstage() {
    local dev
    dev=$(ext4_pod down "echo down > /data/token && busybox sync")

    kc -n kube-system patch ds blocknode-node --type=merge \
        -p '{"spec":{"template":{"spec":{"nodeSelector":{"blocknode.dev/kube-tier-no-node":"true"}}}}}' >/dev/null
    wait_until "the plugin pod to go" 120 ! plugin_pod_exists || kube_fail "the plugin pod was not removed"
    wait_until "kubelet to unregister the driver" 60 ! driver_registered || kube_fail "the driver stayed registered"

    local mark
    mark=$(kubelet_log_mark)
    kc -n "$TEST_NS" delete pod down --wait=false >/dev/null
    wait_until "kubelet to fail the unmount for want of the driver" 90 kubelet_logged_since "$mark" "UnmountVolume.TearDown failed" ||
        kube_fail "kubelet did not try to unmount the volume"
    expect_eq "mounts of the device while the plugin is down" 2 "$(device_mounts "$dev")"
    [[ -n $(kc -n "$TEST_NS" get pod down -o name 2>/dev/null) ]] ||
        kube_fail "the pod left the API before its volume was unmounted"

    kc -n kube-system patch ds blocknode-node --type=json \
        -p '[{"op":"remove","path":"/spec/template/spec/nodeSelector/blocknode.dev~1kube-tier-no-node"}]' >/dev/null
    wait_plugin_ready
    wait_released down "$dev" 180
    wait_until "the pod to leave the API" 60 ! kc -n "$TEST_NS" get pod down ||
        kube_fail "the pod stayed after its volume was released"
    expect_eq "the file on the device" down "$(file_on_device "$dev" token)"
    delete_volume down
}

