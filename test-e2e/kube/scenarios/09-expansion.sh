# Expansion as the external resizer and kubelet do it together: the device grows (here: its loop file),
# the PV's capacity is raised and the claim's status marked NodeResizePending, as csi-resizer would after
# ControllerExpandVolume; kubelet then calls NodeExpandVolume on the node and records the new capacity in
# the claim. The pod sees the larger filesystem (xfs: ext4's online resize needs CAP_SYS_RESOURCE, which
# root lacks on this machine) and the larger raw device.
scenario_expansion() {
    local fsdev blkdev
    kc apply -f - >/dev/null <<EOT
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: blocknode-expandable}
provisioner: $DRIVER
allowVolumeExpansion: true
volumeBindingMode: Immediate
EOT
    fsdev=$(new_loop_device grow-fs 320)
    blkdev=$(new_loop_device grow-block 64)
    create_volume grow-fs "$fsdev" Filesystem xfs ReadWriteOnce 320 blocknode-expandable
    create_volume grow-block "$blkdev" Block "" ReadWriteOnce 64 blocknode-expandable
    create_pod grow-fs grow-fs Filesystem "echo kept > /data/token && busybox sync"
    create_pod grow-block grow-block Block "true"
    wait_pod_ready grow-fs
    wait_pod_ready grow-block
    local before
    before=$(pod_exec grow-fs busybox df -k /data | busybox_df_size)

    grow_volume grow-fs "$fsdev" 480
    grow_volume grow-block "$blkdev" 96
    wait_until "kubelet to expand grow-fs" 90 claim_capacity_is grow-fs 480Mi ||
        kube_fail "the claim's capacity was not updated: $(kc -n "$TEST_NS" get pvc grow-fs -o jsonpath='{.status}')"
    wait_until "kubelet to expand grow-block" 90 claim_capacity_is grow-block 96Mi ||
        kube_fail "the claim's capacity was not updated: $(kc -n "$TEST_NS" get pvc grow-block -o jsonpath='{.status}')"
    local after
    after=$(pod_exec grow-fs busybox df -k /data | busybox_df_size)
    ((after > before + 100 * 1024)) || kube_fail "the pod's filesystem did not grow: ${before} KiB -> ${after} KiB"
    expect_eq "the file after expansion" kept "$(pod_exec grow-fs busybox cat /data/token)"
    expect_eq "the raw device's size in the pod" $((96 << 20)) \
        "$(pod_exec grow-block busybox blockdev --getsize64 /dev/xvda)"

    kc -n "$TEST_NS" delete pod grow-fs grow-block --wait=true --timeout=120s >/dev/null
    wait_released grow-fs "$fsdev"
    wait_released grow-block "$blkdev"
    delete_volume grow-fs
    delete_volume grow-block
    kc delete storageclass blocknode-expandable >/dev/null
}

busybox_df_size() { awk 'NR == 2 { print $2 }'; }

# What csi-resizer leaves behind after a successful ControllerExpandVolume that needs a node expansion.
grow_volume() { # name device new_size_mib
    local name=$1 dev=$2 size=$3
    truncate -s "${size}M" "$(losetup -n -O BACK-FILE "$dev")"
    losetup -c "$dev"
    kc -n "$TEST_NS" patch pvc "$name" --type=merge -p "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"${size}Mi\"}}}}" >/dev/null
    kc patch pv "$name" --type=merge -p "{\"spec\":{\"capacity\":{\"storage\":\"${size}Mi\"}}}" >/dev/null
    kc -n "$TEST_NS" patch pvc "$name" --subresource=status --type=merge -p "{\"status\":{
        \"allocatedResources\":{\"storage\":\"${size}Mi\"},
        \"allocatedResourceStatuses\":{\"storage\":\"NodeResizePending\"},
        \"conditions\":[{\"type\":\"FileSystemResizePending\",\"status\":\"True\"}]}}" >/dev/null
}

claim_capacity_is() { [[ $(kc -n "$TEST_NS" get pvc "$1" -o jsonpath='{.status.capacity.storage}') == "$2" ]]; }
