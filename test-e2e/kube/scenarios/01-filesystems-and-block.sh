# ext4, xfs and raw block volumes: each attached to the node through the controller side (a VolumeAttachment
# marked attached by the external-attacher before kubelet stages), the pod writes, the data is on the device,
# and deleting the pod leaves nothing on the node (NodeUnpublishVolume + NodeUnstageVolume, no mount, no
# staging record) and nothing attached. While they are in use, `blocknode status` in the plugin's container
# lists them healthy and `blocknode doctor` finds the node's kernel and kubelet root ready; during the teardown
# the plugin logs at fine, set through its ConfigMap without a restart.
scenario_filesystems_and_block() {
    local kind dev mode token
    declare -A devices tokens
    for kind in ext4 xfs block; do
        dev=$(new_loop_device "basic-$kind" 320)
        devices[$kind]=$dev
        token="$kind-$RANDOM$RANDOM"
        tokens[$kind]=$token
        if [[ $kind == block ]]; then
            create_volume "basic-$kind" "$dev" Block "" ReadWriteOncePod 320
            create_pod "basic-$kind" "basic-$kind" Block \
                "echo $token | busybox dd of=/dev/xvda bs=512 count=1 conv=fsync"
        else
            create_volume "basic-$kind" "$dev" Filesystem "$kind" ReadWriteOncePod 320
            create_pod "basic-$kind" "basic-$kind" Filesystem "echo $token > /data/token && busybox sync"
        fi
    done
    for kind in ext4 xfs block; do wait_pod_ready "basic-$kind"; done

    for kind in ext4 xfs; do
        expect_eq "mounts of the $kind device (staging + publication)" 2 "$(device_mounts "${devices[$kind]}")"
        expect_eq "the $kind pod's file" "${tokens[$kind]}" "$(pod_exec "basic-$kind" busybox cat /data/token)"
        expect_eq "filesystem type seen by the $kind pod" "$kind" \
            "$(pod_exec "basic-$kind" busybox awk '$2 == "/data" { print $3 }' /proc/mounts)"
    done
    (( $(device_mounts "${devices[block]}") >= 1 )) || kube_fail "the block device is not published to its pod"
    expect_eq "what the block pod reads back" "${tokens[block]}" \
        "$(pod_exec basic-block sh -c 'busybox dd if=/dev/xvda bs=512 count=1 2>/dev/null | busybox head -1')"
    for kind in ext4 xfs block; do
        expect_eq "staging records of basic-$kind" 1 "$(staging_records "basic-$kind")"
        expect_eq "phase of PV basic-$kind" Bound "$(kc get pv "basic-$kind" -o jsonpath='{.status.phase}')"
    done
    for kind in ext4 xfs block; do
        expect_eq "VolumeAttachments of basic-$kind" "$NODE_NAME true" "$(attachments_of "basic-$kind")"
    done
    # What an on-call engineer runs: the image's `blocknode status` in the plugin's container, with the flags this
    # cluster's DaemonSet has. All three volumes staged, their devices present, their publications mounted.
    local status
    status=$(kc -n kube-system exec "$(plugin_pod)" -c blocknode -- blocknode status -o json \
        --state-dir "$STATE_DIR" --kubelet-root "$WORK/kubelet") || kube_fail "blocknode status: exit $?: $status"
    expect_eq "what blocknode status says of the three volumes" "True basic-block basic-ext4 basic-xfs" \
        "$(python3 -c 'import json, sys
s = json.loads(sys.argv[1])
ok = [v for v in s["volumes"] if v["phase"] == "STAGED" and v["device"]["present"] and not v["problems"]
      and all(p["mounted"] for p in v["publications"]) and len(v["publications"]) == 1]
print(s["healthy"], " ".join(sorted(v["volumeId"] for v in ok)))' "$status")"
    local status_text; status_text=$(kc -n kube-system exec "$(plugin_pod)" -c blocknode -- blocknode status \
        --state-dir "$STATE_DIR" --kubelet-root "$WORK/kubelet") || kube_fail "blocknode status: $status_text"
    kube_log "blocknode status in the plugin's container:"$'\n'"$status_text"
    # The node's readiness, as on-call checks it before any volume: `blocknode doctor` in the plugin's container,
    # with this cluster's kubelet root. The kernel features and the Bidirectional kubelet root are ok. Whether FC and
    # NVMe/TCP are set up is the host's to say (an HBA; a host NQN that nvme-cli wrote, a fabrics module), so it is
    # read from the same files doctor reads, never assumed; iSCSI depends on the host too (an initiator name without
    # iscsid is an error), so the exit code is checked against the worst finding rather than fixed.
    local doctor doctor_code=0 fc_set_up=False nvme_set_up=False
    [[ -n $(ls -A /sys/class/fc_host 2>/dev/null) ]] && fc_set_up=True
    [[ -e /etc/nvme/hostnqn || -e /etc/nvme/hostid || -d /sys/module/nvme_fabrics || -d /sys/module/nvme_tcp ]] &&
        nvme_set_up=True
    doctor=$(kc -n kube-system exec "$(plugin_pod)" -c blocknode -- blocknode doctor -o json \
        --kubelet-root "$WORK/kubelet") || doctor_code=$?
    expect_eq "what blocknode doctor says of the node (exit $doctor_code)" \
        "consistent fc:$fc_set_up nvme-tcp:$nvme_set_up kernel:ok kubelet-root:ok" \
        "$(python3 -c 'import json, sys
d = json.loads(sys.argv[1]); code = int(sys.argv[2])
t = {x["transport"]: x for x in d["transports"]}
root = [f["severity"] for f in t["kernel"]["findings"] if f["check"] == "kubelet-root"]
print("consistent" if {"ok": 0, "warning": 1, "error": 2}[d["worst"]] == code else "exit %d but worst %s" % (code, d["worst"]),
      "fc:%s" % t["fc"]["setUp"], "nvme-tcp:%s" % t["nvme-tcp"]["setUp"],
      "kernel:%s" % t["kernel"]["worst"], "kubelet-root:%s" % ",".join(root))' "$doctor" "$doctor_code")"
    local doctor_text; doctor_text=$(kc -n kube-system exec "$(plugin_pod)" -c blocknode -- blocknode doctor \
        --kubelet-root "$WORK/kubelet") || true
    [[ $fc_set_up == True ]] || grep -q '^fc: not set up (' <<<"$doctor_text" ||
        kube_fail "blocknode doctor: $doctor_text"
    [[ $nvme_set_up == True ]] || grep -q '^nvme-tcp: not set up (' <<<"$doctor_text" ||
        kube_fail "blocknode doctor: $doctor_text"
    kube_log "blocknode doctor in the plugin's container (exit $doctor_code):"$'\n'"$doctor_text"
    # The support bundle a user sends, made with kubectl alone while the volumes are in use.
    check_support_bundle

    # The log level changed at run time, as an operator chasing a stuck volume does: the ConfigMap the plugin
    # reads, no restart. The FINE lines (kubelet's periodic calls: Probe, capabilities, stats) then show; the level
    # goes back after the teardown.
    local pod; pod=$(plugin_pod)
    set_log_level fine "$pod" info

    for kind in ext4 xfs block; do kc -n "$TEST_NS" delete pod "basic-$kind" --wait=false >/dev/null; done
    for kind in ext4 xfs block; do
        wait_released "basic-$kind" "${devices[$kind]}"
        wait_detached "basic-$kind"
        if [[ $kind == block ]]; then
            expect_eq "the block device's first block" "${tokens[$kind]}" "$(device_block "${devices[$kind]}")"
        else
            expect_eq "the file on the $kind device" "${tokens[$kind]}" "$(file_on_device "${devices[$kind]}" token)"
        fi
        delete_volume "basic-$kind"
    done
    (( $(kc -n kube-system logs "$pod" -c blocknode | grep -c '"level":"FINE"') > 0 )) ||
        kube_fail "no FINE line in the plugin's log while its level was fine"
    set_log_level info "$pod" fine
    expect_eq "the plugin's restarts while its level changed" 0 \
        "$(kc -n kube-system get pod "$pod" -o jsonpath='{.status.containerStatuses[?(@.name=="blocknode")].restartCount}')"
}

# set_log_level LEVEL POD FROM: the blocknode-log-level ConfigMap set to LEVEL; waits for the plugin in POD to
# say it changed from FROM (kubelet refreshes the mounted file at its sync period, 10 s in this cluster).
set_log_level() {
    kc -n kube-system patch configmap blocknode-log-level --type merge -p "{\"data\":{\"level\":\"$1\"}}" >/dev/null
    wait_until "the plugin to log at $1" 90 plugin_logged "$2" "log level $3 -> $1" ||
        kube_fail "the plugin did not change its level to $1: $(kc -n kube-system logs "$2" -c blocknode --tail=5)"
}
plugin_logged() { kc -n kube-system logs "$1" -c blocknode | grep -qF "$2"; } # pod text

# deploy/support-bundle.sh against this cluster: every container's log, status and doctor of the node, the
# cluster's objects of the three volumes, no step failed, no Secret.
check_support_bundle() {
    local dir=$WORK/support archive
    mkdir -p "$dir"
    archive=$dir/bundle.tar.gz
    PATH="$KUBE_BIN:$PATH" bash "$repo/deploy/support-bundle.sh" -o "$archive" -- \
        --kubeconfig "$WORK/pki/admin.kubeconfig" >"$dir/out.txt" 2>&1 ||
        kube_fail "support-bundle.sh failed: $(tail -5 "$dir/out.txt")"
    tar -C "$dir" -xzf "$archive" || kube_fail "the support bundle is not a tar.gz"
    local b; b=$(echo "$dir"/blocknode-support-*)
    [[ ! -s $b/errors.txt ]] || kube_fail "support bundle steps failed: $(cat "$b/errors.txt")"
    local node=$b/nodes/$NODE_NAME c
    for c in blocknode node-driver-registrar liveness-probe; do
        [[ -s $node/logs/$c.log ]] || kube_fail "the support bundle has no log of $c"
    done
    expect_eq "the volumes in the bundle's status.json" "basic-block basic-ext4 basic-xfs" \
        "$(python3 -c 'import json, sys; print(" ".join(sorted(v["volumeId"] for v in json.load(open(sys.argv[1]))["volumes"])))' \
            "$node/status.json")"
    expect_eq "the bundle's doctor.json schema" 1 \
        "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["schemaVersion"])' "$node/doctor.json")"
    for kind in ext4 xfs block; do
        grep -q "basic-$kind" "$b/cluster/pvs.yaml" && grep -q "basic-$kind" "$b/cluster/volumeattachments.yaml" ||
            kube_fail "the support bundle lacks the PV or VolumeAttachment of basic-$kind"
        [[ -s $b/cluster/pvcs/$TEST_NS/basic-$kind.yaml ]] || kube_fail "the support bundle lacks the PVC basic-$kind"
    done
    [[ -s $b/cluster/csidriver.yaml && -s $b/cluster/csinodes.yaml && -s $b/cluster/events/$TEST_NS.txt ]] ||
        kube_fail "the support bundle lacks the CSIDriver, the CSINodes or the events of $TEST_NS"
    ! grep -rlq '^kind: Secret$' "$b" || kube_fail "the support bundle holds a Secret"
    kube_log "support bundle: $(du -h "$archive" | cut -f1), $(find "$b" -type f | wc -l) files"
}
