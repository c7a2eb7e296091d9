# A storm: pods churn on an ext4, an xfs and a raw block volume (each generation writes its own token and
# confirms it by reading it back) while kubelet is killed -9 and restarted, the plugin's container is killed -9
# and the plugin's pod is deleted, at seeded random moments. Afterwards every pod converges, every confirmed
# token is on its device, and with all pods gone nothing is mounted, staged or recorded.
#   KUBE_STORM_SECONDS (default 90), KUBE_STORM_SEED (default: random, printed)
scenario_storm() {
    local seconds=${KUBE_STORM_SECONDS:-90} seed=${KUBE_STORM_SEED:-$((RANDOM * 32768 + RANDOM))}
    RANDOM=$seed
    kube_log "storm: $seconds s, seed $seed (KUBE_STORM_SEED=$seed repeats the sequence of faults)"
    local storm=$WORK/storm kind
    mkdir -p "$storm"
    declare -A devices
    devices[ext4]=$(new_loop_device storm-ext4 64)
    devices[xfs]=$(new_loop_device storm-xfs 320)
    devices[block]=$(new_loop_device storm-block 64)
    create_volume storm-ext4 "${devices[ext4]}" Filesystem ext4 ReadWriteOnce 64
    create_volume storm-xfs "${devices[xfs]}" Filesystem xfs ReadWriteOnce 320
    create_volume storm-block "${devices[block]}" Block "" ReadWriteOnce 64
    local churners=()
    for kind in ext4 xfs block; do
        churn "$kind" >"$storm/$kind.log" 2>&1 &
        churners+=($!)
    done

    local deadline=$(( $(date +%s) + seconds )) faults=0
    while (( $(date +%s) < deadline )); do
        # A pause between faults (the storm's rhythm, not a wait for anything): 4-11 s.
        sleep $((RANDOM % 8 + 4))
        case $((RANDOM % 3)) in
            0) kube_log "storm: kill -9 kubelet"; kill_component kubelet; sleep $((RANDOM % 4 + 1)); up_kubelet ;;
            1) kube_log "storm: kill -9 the plugin's container"; kill_plugin_container || true ;;
            2) kube_log "storm: delete the plugin's pod"
               kc -n kube-system delete pod "$(plugin_pod)" --wait=false >/dev/null 2>&1 || true ;;
        esac
        faults=$((faults + 1))
    done
    touch "$storm/stop"
    component_running kubelet || up_kubelet
    wait_node_ready
    wait_plugin_ready 300
    local pid failed=0
    for pid in "${churners[@]}"; do wait "$pid" || failed=1; done
    for kind in ext4 xfs block; do
        kube_log "storm: $kind: $(wc -l <"$storm/$kind.confirmed" 2>/dev/null || echo 0) generations confirmed"
    done
    ((failed == 0)) || kube_fail "a churner failed: $(tail -n 3 "$storm"/*.log)"
    for kind in ext4 xfs block; do
        storm_release "$kind" "${devices[$kind]}"
    done
    local token found
    for kind in ext4 xfs; do
        found=$(file_on_device "${devices[$kind]}" log)
        while read -r token; do
            grep -qx "$token" <<<"$found" || kube_fail "confirmed token $token is not on the $kind device"
        done <"$storm/$kind.confirmed"
    done
    while read -r token; do
        expect_eq "block ${token##*-} of the storm's block device" "$token" \
            "$(device_block "${devices[block]}" "${token##*-}")"
    done <"$storm/block.confirmed"
    kube_log "storm: $faults faults; every pod converged and every confirmed write is on its device"
    for kind in ext4 xfs block; do delete_volume "storm-$kind"; done
}

# Waits until KIND's volume is released: unpublished and unstaged by kubelet. Kubelet can lose it: killed after a
# volume's unpublish and before its unstage, it rebuilds its state from pod directories only, and the pod's is gone
# (kubernetes/kubernetes#85476; seen here when the kill fell between a raw block pod's UnmapPodDevice and its
# UnmapDevice). It then never unstages the volume and drops it from the node's status.volumesInUse. Seen so (staged by
# blocknode, not in use by kubelet) for 5 s (two node statuses, every 2 s here), the volume gets one more pod, as a
# user's next pod on the claim would: kubelet stages it (blocknode has it staged already), publishes it, and unstages
# it when that pod goes; blocknode retires any publication of the lost pod on the way. The volume must be released
# either way; the log says which.
storm_release() { # kind device
    local kind=$1 volume=storm-$1 mode=Filesystem
    [[ $kind == block ]] && mode=Block
    STORM_FORGOTTEN_AT=""
    wait_until "volume $volume to be released, or forgotten by kubelet" 240 released_or_forgotten "$volume" "$2" ||
        kube_fail "volume $volume not released: $(device_mounts "$2") mounts of $2, $(staging_records "$volume") staging records, $(volume_in_use "$volume" && echo "in use" || echo "not in use") by kubelet"
    released "$volume" "$2" && return
    kube_log "storm: kubelet lost track of $volume while it was staged (not in the node's volumesInUse for 5 s:" \
        "kubernetes/kubernetes#85476); one more pod on its claim"
    create_pod "$volume-after" "$volume" "$mode" "true"
    wait_pod_ready "$volume-after" 240
    delete_pod "$volume-after"
    wait_released "$volume" "$2" 240
}

# Released, or still staged by blocknode while kubelet has not listed it in use for 5 s.
released_or_forgotten() { # volume device
    released "$1" "$2" && return 0
    if [[ $(staging_records "$1") == 1 ]] && ! volume_in_use "$1"; then
        STORM_FORGOTTEN_AT=${STORM_FORGOTTEN_AT:-$(date +%s)}
        (( $(date +%s) - STORM_FORGOTTEN_AT >= 5 ))
    else
        STORM_FORGOTTEN_AT=""; return 1
    fi
}

# Whether the node's status lists VOLUME in use (a failed read counts as in use: doubt is not absence).
volume_in_use() { # volume
    local in_use
    in_use=$(kc get node "$NODE_NAME" -o jsonpath='{.status.volumesInUse}') || return 0
    [[ $in_use == *"kubernetes.io/csi/$DRIVER^$1"* ]]
}

# One volume's generations of pods until $WORK/storm/stop appears; each confirmed token goes to KIND.confirmed.
churn() { # kind
    local kind=$1 n=0 pod token script mode=Filesystem
    [[ $kind == block ]] && mode=Block
    while [[ ! -e $WORK/storm/stop ]]; do
        n=$((n + 1)); pod=storm-$kind-$n; token=storm-$kind-$n
        if [[ $mode == Block ]]; then
            script="echo $token | busybox dd of=/dev/xvda bs=512 seek=$n count=1 conv=fsync"
        else
            script="echo $token >> /data/log && busybox sync"
        fi
        create_pod "$pod" "storm-$kind" "$mode" "$script"
        wait_until "storm pod $pod to be Ready" 240 kc -n "$TEST_NS" wait --for=condition=Ready "pod/$pod" --timeout=2s ||
            { echo "pod $pod never became Ready"; return 1; }
        wait_until "storm pod $pod to show its token" 120 token_written "$pod" "$mode" "$n" "$token" ||
            { echo "pod $pod never showed its token"; return 1; }
        echo "$token" >>"$WORK/storm/$kind.confirmed"
        kc -n "$TEST_NS" delete pod "$pod" --wait=false >/dev/null
        wait_until "storm pod $pod to be gone" 240 ! kc -n "$TEST_NS" get pod "$pod" ||
            { echo "pod $pod was never removed"; return 1; }
    done
}

token_written() { # pod mode generation token
    if [[ $2 == Block ]]; then
        [[ $(pod_exec "$1" sh -c "busybox dd if=/dev/xvda bs=512 skip=$3 count=1 2>/dev/null | busybox head -1") == "$4" ]]
    else
        pod_exec "$1" busybox grep -qx "$4" /data/log
    fi
}
