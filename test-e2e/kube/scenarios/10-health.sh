# Volume health (kubelet's CSIVolumeHealth feature): the filesystem under a running pod turns read-only, as ext4
# does after an I/O error (errors=remount-ro). Up to Kubernetes 1.36 kubelet reads NodeGetVolumeStats'
# VolumeCondition and turns it into a VolumeConditionAbnormal event on the pod; from 1.37 it asks
# NodeGetVolumeHealth (CSI 1.13) and writes the conditions into pod.status.volumeHealth, and clears them once
# the plugin reports the volume healthy again. blocknode answers both ways; each kubelet is checked its own way.
scenario_health() {
    local dev staged
    dev=$(ext4_pod health "true")
    staged=$(findmnt -rn -S "$dev" -o TARGET | grep '/globalmount$')
    [[ -n $staged ]] || kube_fail "no staging mount of $dev"
    mount -o remount,ro "$staged"
    if (( $(kube_minor) >= 37 )); then
        wait_until "kubelet to write Degraded/FilesystemReadOnly into the pod's volumeHealth" 60 \
            pod_volume_health health "vol" "Degraded/FilesystemReadOnly" ||
            { mount -o remount,rw "$staged"; kube_fail "no volumeHealth condition: $(pod_field health '{.status.volumeHealth}')"; }
        mount -o remount,rw "$staged"
        wait_until "kubelet to clear the pod's volumeHealth conditions" 60 pod_volume_health health "vol" "" ||
            kube_fail "volumeHealth not cleared: $(pod_field health '{.status.volumeHealth}')"
    else
        wait_until "kubelet to record a VolumeConditionAbnormal event" 60 abnormal_event_names health "read-only" ||
            { mount -o remount,rw "$staged"; kube_fail "no VolumeConditionAbnormal event: $(kc -n "$TEST_NS" get events -o wide | tail -5)"; }
        mount -o remount,rw "$staged"
    fi
    delete_pod health
    wait_released health "$dev"
    delete_volume health
}

abnormal_event_names() { # pod text
    kc -n "$TEST_NS" get events --field-selector "involvedObject.name=$1,reason=VolumeConditionAbnormal" \
        -o jsonpath='{.items[*].message}' | grep -q "$2"
}

# Whether the pod's volumeHealth conditions of one volume are exactly EXPECTED ("Status/Reason ...", "" = none).
pod_volume_health() { # pod volume expected
    local got
    got=$(pod_field "$1" "{range .status.volumeHealth[?(@.name==\"$2\")].healthConditions[*]}{.status}/{.reason} {end}")
    [[ ${got% } == "$3" ]]
}
