# Volume stats as kubelet shows them: kubelet calls NodeGetVolumeStats every volumeStatsAggPeriod (10 s here)
# and exports kubelet_volume_stats_*; for a filesystem volume they must be the filesystem's own figures (as
# statfs on the node sees them), for a raw block volume the device's capacity.
scenario_stats() {
    local dev blk staged fs_capacity
    dev=$(new_loop_device stats-fs 64)
    blk=$(new_loop_device stats-block 48)
    create_volume stats-fs "$dev" Filesystem ext4 ReadWriteOnce 64
    create_volume stats-block "$blk" Block "" ReadWriteOnce 48
    create_pod stats-fs stats-fs Filesystem "busybox dd if=/dev/zero of=/data/fill bs=1M count=8 && busybox sync"
    create_pod stats-block stats-block Block "true"
    wait_pod_ready stats-fs
    wait_pod_ready stats-block

    wait_until "kubelet to report 8 MiB used on stats-fs" 60 volume_metric_at_least stats-fs used_bytes $((8 << 20)) ||
        kube_fail "kubelet's stats for stats-fs: $(volume_metrics stats-fs)"
    staged=$(findmnt -rn -S "$dev" -o TARGET | head -1)
    fs_capacity=$(stat -f -c '%b * %S' "$staged")
    expect_eq "kubelet_volume_stats_capacity_bytes of stats-fs (statfs on the node)" "$((fs_capacity))" \
        "$(volume_metric stats-fs capacity_bytes)"
    expect_eq "kubelet_volume_stats_inodes of stats-fs (statfs on the node)" "$(stat -f -c %c "$staged")" \
        "$(volume_metric stats-fs inodes)"
    # kubelet 1.37 dropped this metric with the VolumeCondition path (see scenarios/10-health.sh).
    if (( $(kube_minor) < 37 )); then
        expect_eq "kubelet_volume_stats_health_status_abnormal of stats-fs" 0 \
            "$(volume_metric stats-fs health_status_abnormal)"
    fi
    wait_until "kubelet to report the capacity of stats-block" 60 volume_metric_at_least stats-block capacity_bytes 1 ||
        kube_fail "kubelet shows no stats for the raw block volume: $(volume_metrics stats-block)"
    expect_eq "kubelet_volume_stats_capacity_bytes of stats-block (the device's size)" \
        "$(blockdev --getsize64 "$blk")" "$(volume_metric stats-block capacity_bytes)"

    kc -n "$TEST_NS" delete pod stats-fs stats-block --wait=true --timeout=120s >/dev/null
    wait_released stats-fs "$dev"
    wait_released stats-block "$blk"
    delete_volume stats-fs
    delete_volume stats-block
}

# kubelet's own metrics, through the apiserver's node proxy.
volume_metrics() { # claim
    kc get --raw "/api/v1/nodes/$NODE_NAME/proxy/metrics" |
        grep "^kubelet_volume_stats_.*{namespace=\"$TEST_NS\",persistentvolumeclaim=\"$1\"}" || true
}

# One figure as an integer (the exposition format may write 5.7381888e+07).
volume_metric() { # claim name
    volume_metrics "$1" | awk -v m="kubelet_volume_stats_$2{" 'index($0, m) == 1 { printf "%d\n", $2 }'
}

volume_metric_at_least() { # claim name minimum
    local value
    value=$(volume_metric "$1" "$2")
    [[ -n $value ]] && ((value >= $3))
}
