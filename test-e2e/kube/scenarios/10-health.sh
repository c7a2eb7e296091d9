# Volume health (kubelet's CSIVolumeHealth feature, up to Kubernetes 1.36): the filesystem under a running pod turns read-only, as
# ext4 does after an I/O error (errors=remount-ro); blocknode's NodeGetVolumeStats reports an abnormal
# VolumeCondition, and kubelet turns it into a VolumeConditionAbnormal event on the pod and its health metric.
scenario_health() {
    if (( $(kube_minor) >= 37 )); then
        skip_scenario "kubelet $(kube_minor | sed 's/^/1./') no longer turns NodeGetVolumeStats' VolumeCondition into events or the
health metric; it asks NodeGetVolumeHealth (CSIVolumeHealth, a CSI spec revision after v1.12.0) and writes
pod.status.volumeHealth, which blocknode does not implement yet. KUBE_VERSION=v1.36.3 runs this scenario."
        return
    fi
    local dev staged
    dev=$(ext4_pod health "true")
    staged=$(findmnt -rn -S "$dev" -o TARGET | grep '/globalmount$')
    [[ -n $staged ]] || kube_fail "no staging mount of $dev"
    mount -o remount,ro "$staged"
    wait_until "kubelet to record a VolumeConditionAbnormal event" 60 abnormal_event_names health "read-only" ||
        { mount -o remount,rw "$staged"; kube_fail "no VolumeConditionAbnormal event: $(kc -n "$TEST_NS" get events -o wide | tail -5)"; }
    mount -o remount,rw "$staged"
    delete_pod health
    wait_released health "$dev"
    delete_volume health
}

abnormal_event_names() { # pod text
    kc -n "$TEST_NS" get events --field-selector "involvedObject.name=$1,reason=VolumeConditionAbnormal" \
        -o jsonpath='{.items[*].message}' | grep -q "$2"
}
