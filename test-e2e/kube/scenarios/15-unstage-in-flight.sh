# kubelet killed between NodeUnpublishVolume and the end of NodeUnstageVolume, then restarted. kubelet
# (through 1.37) rebuilds its volume state from pod directories alone, and NodeUnpublishVolume's success
# already removed the pod's: the restarted kubelet never asks for the unstage again
# (kubernetes/kubernetes#121937; a fallback is an open proposal, KEP-6058, alpha and off if it lands). What
# ends the volume clean is blocknode finishing the unstage it was asked for, caller gone or not. The window is
# made, not raced: the plugin runs with its test pause point after the unstage's intent is recorded
# (BLOCKNODE_PAUSE_AT=unstage.recorded, a FIFO as the gate), kubelet is killed -9 while the call waits there,
# the gate opens, kubelet starts again; the device must end unmounted, the record gone, the staging path no
# mount. The DaemonSet's environment is put back at the end.
#
# The same window one step earlier (kubelet dead after the unpublish, before it sends the unstage) leaves the
# volume staged for kubelet 1.37: no call comes to blocknode at all. A later pod on the claim on this node
# unstages it when it goes (stale-publication shows that path for raw block).
scenario_unstage_in_flight() {
    local dev gate env staging
    dev=$(new_loop_device inflight 64)
    create_volume inflight "$dev" Filesystem ext4 ReadWriteOnce 64
    # Under the kubelet root: mounted into the plugin's container at the same path.
    gate=$WORK/kubelet/blocknode-pause-gate
    mkfifo "$gate"
    env=$WORK/unstage-in-flight-env.json
    plugin_container_field env >"$env"
    set_plugin_container_field env "$(python3 -c '
import json, sys
env = json.loads(open(sys.argv[1]).read() or "[]")
print(json.dumps(env + [{"name": "BLOCKNODE_PAUSE_AT", "value": "unstage.recorded"},
                        {"name": "BLOCKNODE_PAUSE_GATE", "value": sys.argv[2]}]))' "$env" "$gate")"

    create_pod inflight inflight Filesystem "echo kept > /data/token && busybox sync"
    wait_pod_ready inflight
    staging=$(staging_path_of "$dev")
    [[ -n $staging ]] || kube_fail "no staging mount of $dev under the kubelet root"
    kc -n "$TEST_NS" delete pod inflight --wait=false >/dev/null
    wait_until "NodeUnstageVolume to reach its pause point" 120 plugin_logged "reached: pausing until" ||
        kube_fail "the unstage never paused: $(kc -n kube-system logs "$(plugin_pod)" -c blocknode --tail=10 2>&1)"
    expect_eq "mounts of the device while the unstage waits (the staging mount alone)" 1 "$(device_mounts "$dev")"

    kill_component kubelet
    # Opened for writing, written, closed: the paused call reads to EOF and goes on. Bounded, since an open
    # for writing blocks until the reader is there.
    timeout 10 bash -c 'echo open >"$1"' _ "$gate" || kube_fail "the pause gate $gate could not be opened"
    wait_until "the unstage to finish with its caller gone" 60 released inflight "$dev" ||
        kube_fail "the volume was not unstaged: $(device_mounts "$dev") mount(s), $(staging_records inflight) record(s)"
    up_kubelet
    wait_node_ready
    wait_until "the pod to go" 120 ! kc -n "$TEST_NS" get pod inflight ||
        kube_fail "pod inflight stays: $(kc -n "$TEST_NS" describe pod inflight | tail -8)"
    expect_eq "mounts of the device after kubelet's restart" 0 "$(device_mounts "$dev")"
    expect_eq "staging records after kubelet's restart" 0 "$(staging_records inflight)"
    mountpoint -q "$staging" && kube_fail "the staging path $staging is still a mount point"
    kube_log "unstage-in-flight: kubelet's staging directory $( [[ -e $staging ]] && echo "is left (kubelet's own, with its vol_data.json beside it)" || echo "is gone")"
    expect_eq "the file on the device" kept "$(file_on_device "$dev" token)"

    rm -f "$gate"
    local saved
    saved=$(cat "$env")
    set_plugin_container_field env "${saved:-null}"
    delete_volume inflight
}

# The staging mount of DEVICE: its mount point under the kubelet root that is no pod's.
staging_path_of() { # device
    local majmin
    majmin=$(printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")")
    awk -v mm="$majmin" -v root="$WORK/kubelet/plugins/" '$3 == mm && index($5, root) == 1 { print $5; exit }' \
        /proc/self/mountinfo
}

plugin_logged() { kc -n kube-system logs "$(plugin_pod)" -c blocknode 2>/dev/null | grep -qF "$1"; } # text
