# The leak kubelet's reconstruction gap can cause (kubernetes/kubernetes#85476, for raw block volumes), found
# by this tier's first storm: the registrar down, kubelet restarted, a raw-block pod deleted (kubelet removes
# its own side but cannot call NodeUnpublishVolume: the driver is not registered), kubelet restarted again
# (it forgets the publication, and the volume with it: kubelet rebuilds its state from pod directories). The
# volume stays staged with the dead pod's publication. The next pod on the claim is staged (already) and
# published; when it goes, kubelet unstages, and blocknode, instead of refusing that for ever ("still
# published"), retires the publication whose pod no longer exists (logged, counted) and unstages: nothing is
# left. (A plugin that starts after the pod's directory is gone retires it at start-up instead.)
scenario_stale_publication() {
    local dev uid
    dev=$(new_loop_device stale 64)
    create_volume stale "$dev" Block "" ReadWriteOnce 64
    create_pod stale stale Block "echo stale | busybox dd of=/dev/xvda bs=512 count=1 conv=fsync"
    wait_pod_ready stale
    uid=$(pod_field stale '{.metadata.uid}')

    local args
    args=$(kc -n kube-system get ds blocknode-node \
        -o jsonpath='{.spec.template.spec.containers[?(@.name=="node-driver-registrar")].args}')
    # The registrar crash-looping: it cannot reach the plugin's socket, so the driver is never registered.
    kc -n kube-system patch ds blocknode-node --type=strategic -p '{"spec":{"template":{"spec":{"containers":[
        {"name":"node-driver-registrar","args":["--csi-address=/csi/no-such.sock","--timeout=1s","--v=2",
         "--kubelet-registration-path='"$WORK"'/kubelet/plugins/'"$DRIVER"'/no-such.sock"]}]}}}}' >/dev/null
    wait_until "the driver to be unregistered" 120 ! driver_registered || kube_fail "the driver stayed registered"
    restart_kubelet
    local mark
    mark=$(kubelet_log_mark)
    kc -n "$TEST_NS" delete pod stale --wait=false >/dev/null
    # kubelet removes its own side of the volume (UnmapBlockVolume) before it calls the driver (UnmapPodDevice).
    wait_until "kubelet to fail the unmap for want of the driver" 90 \
        kubelet_logged_since "$mark" "UnmapVolume.UnmapPodDevice failed" ||
        kube_fail "kubelet did not try to unmap the volume"
    restart_kubelet

    kc -n kube-system patch ds blocknode-node --type=strategic \
        -p "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"node-driver-registrar\",\"args\":$args}]}}}}" >/dev/null
    wait_plugin_ready
    wait_until "kubelet to remove the deleted pod's directory" 60 ! test -e "$WORK/kubelet/pods/$uid" ||
        kube_fail "the deleted pod's directory is left: $WORK/kubelet/pods/$uid"
    # The new plugin pod may start after kubelet removed the pod's directory and retire the publication at
    # start-up already; else it is still there, and the unstage below retires it. Once, either way.

    create_pod stale-next stale Block "true"
    wait_pod_ready stale-next
    delete_pod stale-next
    wait_released stale "$dev" 120
    expect_eq "the block device's first block" stale "$(device_block "$dev")"
    expect_eq "publications retired by blocknode" 1 "$(plugin_log_count "retired publication")"
    delete_volume stale
}
