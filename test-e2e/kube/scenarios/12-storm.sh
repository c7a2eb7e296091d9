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
        wait_released "storm-$kind" "${devices[$kind]}" 240
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
