# The node's volume limit as kubelet and the scheduler meet it (KEP-4876). The plugin's cap is lowered to 1
# (its DaemonSet's --max-volumes-per-node, whatever the rendering deployed) and CSINode's allocatable count
# follows; with one volume in use, the scheduler keeps a second pod off the node ("exceed max volume count"),
# and a pod placed past the scheduler (spec.nodeName) reaches NodeStageVolume, which blocknode refuses with
# RESOURCE_EXHAUSTED, staging and recording nothing. kubelet (1.37 as 1.34-1.36) fails a pod for
# RESOURCE_EXHAUSTED only when it is an attach error on the VolumeAttachment (VerifyExhaustedResource), which
# blocknode's attach never returns (it touches no storage); a refused stage is retried, so the pod waits, and
# starts once the first pod's volume is released. The DaemonSet's arguments are put back at the end and the
# count with them.
#
# This node has no device-mapper, so the other part of the bound (multipath maps outside blocknode) cannot
# move here; the unit tier (VolumeLimitUnitTest) and the host tier (NodeInfoHostTest) cover it.
scenario_node_limit() {
    local d1 d2 original
    d1=$(new_loop_device limit-1 64); d2=$(new_loop_device limit-2 64)
    create_volume limit-1 "$d1" Filesystem ext4 ReadWriteOnce 64
    create_volume limit-2 "$d2" Filesystem ext4 ReadWriteOnce 64
    original=$(csinode_count)

    local args=$WORK/node-limit-args.json
    plugin_container_field args >"$args"
    set_plugin_container_field args "$(python3 -c '
import json, sys
args = [a for a in json.load(open(sys.argv[1])) if not a.startswith("--max-volumes-per-node")]
print(json.dumps(args + ["--max-volumes-per-node=1"]))' "$args")"
    wait_until "CSINode's allocatable count to be 1" 60 csinode_count_is 1 ||
        kube_fail "CSINode's count is '$(csinode_count)' under --max-volumes-per-node=1"

    create_pod holder limit-1 Filesystem "echo held > /data/token && busybox sync"
    wait_pod_ready holder

    # The scheduler counts the node's volumes against CSINode's count itself.
    create_pod scheduled limit-2 Filesystem "true"
    wait_until "the scheduler to refuse pod scheduled" 60 pod_unschedulable scheduled "exceed max volume count" ||
        kube_fail "pod scheduled was not refused for the volume count: $(pod_field scheduled '{.status.conditions}')"
    delete_pod scheduled

    # Past the scheduler: kubelet attaches, then stages, and blocknode refuses the stage.
    create_pod placed limit-2 Filesystem "echo placed > /data/token && busybox sync" false "$NODE_NAME"
    wait_until "kubelet to report the refused stage" 120 mount_failed_with placed "ResourceExhausted" ||
        kube_fail "no FailedMount event with ResourceExhausted for pod placed: $(failed_mounts placed)"
    [[ $(failed_mounts placed) == *"node volume limit reached"* ]] ||
        kube_fail "the refusal does not say the node's limit was reached: $(failed_mounts placed)"
    kube_log "node-limit: kubelet's event: $(failed_mounts placed | cut -c1-400)"
    expect_eq "staging records of the refused volume" 0 "$(staging_records limit-2)"
    expect_eq "mounts of the refused volume's device" 0 "$(device_mounts "$d2")"
    expect_eq "pod placed's phase while its stage is refused" Pending "$(pod_field placed '{.status.phase}')"

    # Room again: kubelet's next retry stages it.
    delete_pod holder
    wait_released limit-1 "$d1"
    wait_pod_ready placed 180
    delete_pod placed
    wait_released limit-2 "$d2"
    expect_eq "holder's file on its device" held "$(file_on_device "$d1" token)"
    expect_eq "placed's file on its device" placed "$(file_on_device "$d2" token)"

    set_plugin_container_field args "$(cat "$args")"
    wait_until "CSINode's allocatable count to be '$original' again" 60 csinode_count_is "$original" ||
        kube_fail "CSINode's count is '$(csinode_count)', not '$original', after the arguments were put back"
    delete_volume limit-1
    delete_volume limit-2
}

csinode_count() {
    kc get csinode "$NODE_NAME" -o jsonpath='{.spec.drivers[?(@.name=="'"$DRIVER"'")].allocatable.count}'
}
csinode_count_is() { driver_registered && [[ $(csinode_count) == "$1" ]]; }

pod_unschedulable() { # pod text
    [[ $(pod_field "$1" '{.status.conditions[?(@.type=="PodScheduled")].message}') == *"$2"* ]]
}

failed_mounts() { # pod
    kc -n "$TEST_NS" get events --field-selector "involvedObject.name=$1,reason=FailedMount" \
        -o jsonpath='{.items[*].message}'
}
mount_failed_with() { [[ $(failed_mounts "$1") == *"$2"* ]]; } # pod text
