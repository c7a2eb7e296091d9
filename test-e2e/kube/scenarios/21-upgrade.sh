# A rolling upgrade with volumes in use, and its rollback, as docs/operations.md tells an operator: the previous
# release (a pinned earlier commit of main, built by build-previous.sh) installed with helm, a filesystem volume in
# use on each node and a raw block volume shared by both (ReadWriteMany), a writer on each running all along; then
# `helm upgrade` to the release under test with the values given at install (`helm get values`), which rolls the
# DaemonSet one node at a time (its RollingUpdate, maxUnavailable 1), and `helm rollback` to the previous release.
# Across each: no workload pod restarted (the same container), no write failed and the writers went on, no volume
# remounted (each mount of the devices keeps its mount ID on both nodes), every staging record carried over and
# `blocknode status` saying the same of every volume before and after, the attachments unchanged. Before the
# rollback one record is given a newer format, as a later release would write it: the older build must refuse that
# volume alone, never the node, and read it again once it is put back.

UPGRADE_FS_A=upgrade-fs-a UPGRADE_FS_B=upgrade-fs-b UPGRADE_BLOCK=upgrade-block

scenario_upgrade() {
    [[ -n ${PREVIOUS_DIST:-} ]] || kube_fail "no previous release (run.sh builds it with build-previous.sh)"
    replace_deployment_with_previous
    start_writers_on_both_nodes
    local before
    before=$(upgrade_snapshot)
    kube_log "in use on both nodes under the previous release:"$'\n'"$before"
    WRITER_COUNTS=()
    expect_writers_went_on

    upgrade_as_documented
    wait_rolled_to "$PLUGIN_IMAGE@sha256:"
    expect_unchanged_since "$before" "the upgrade to $RELEASE_VERSION"
    kube_log "upgraded to $RELEASE_VERSION node by node: nothing remounted or restarted, every record and status the same, the writers went on"

    # Across a record format: one record on the first node as a later release with a newer format would write
    # it, before the rollback. The older build refuses that volume alone and serves the rest.
    SCENARIO_UNDO=(rewrite_record_format "$UPGRADE_FS_A" 1)
    rewrite_record_format "$UPGRADE_FS_A" 2
    helm_kc rollback blocknode -n kube-system >"$WORK/logs/helm-rollback.log" 2>&1 ||
        kube_fail "helm rollback failed: $(tail -5 "$WORK/logs/helm-rollback.log")"
    wait_rolled_to "$REGISTRY/blocknode/blocknode:$PREVIOUS_VERSION@sha256:"
    expect_refused_alone "$UPGRADE_FS_A" "$before"
    rewrite_record_format "$UPGRADE_FS_A" 1
    SCENARIO_UNDO=()
    wait_until "the plugin on $NODE_NAME to read the repaired record" 30 unreadable_records_metric_is 0 ||
        kube_fail "the plugin on $NODE_NAME still counts the repaired record unreadable: $(unreadable_records_metric)"
    expect_unchanged_since "$before" "the rollback to $PREVIOUS_VERSION and the record's repair"
    kube_log "rolled back to $PREVIOUS_VERSION node by node: the same, and the repaired record read again without a restart"

    release_writers_volumes
}

# Node A's staging record of VOLUME rewritten with format_version VERSION, as a release of that record format
# writes it (RecordCodec: the magic, the CRC32C of the payload, the payload; format_version is the payload's first
# field, tag 08), replaced by rename as the plugin writes its records.
rewrite_record_format() { # volume version
    local file
    file=$STATE_DIR/volumes/$(record_file_name "$1")
    python3 - "$file" "$2" <<'EOT' || kube_fail "the record of $1 could not be rewritten with format version $2"
import os, struct, sys

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

path, version = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
payload = data[8:]
if data[:4] != b"bnr1" or struct.unpack(">I", data[4:8])[0] != crc32c(payload) or payload[:1] != b"\x08" \
        or payload[1] >= 0x80:
    sys.exit("%s: not a record with a one-byte format_version first" % path)
payload = b"\x08" + bytes([version]) + payload[2:]
tmp = path + ".rewrite"
with open(tmp, "wb") as out:
    out.write(b"bnr1" + struct.pack(">I", crc32c(payload)) + payload)
    out.flush()
    os.fsync(out.fileno())
os.chmod(tmp, os.stat(path).st_mode & 0o7777)
os.replace(tmp, path)
EOT
    kube_log "the staging record of $1 on $NODE_NAME rewritten with format version $2"
}

# After the rollback, the older build on the first node refuses VOLUME, whose record has a newer format, and only
# it: its start names the file and the version, kubelet's NodeGetVolumeStats for it is FAILED_PRECONDITION, the
# metric and `blocknode status` count it unreadable; everything else is as before the upgrade (the writers, every
# mount, the records, the other volumes' status on both nodes, the attachments), and the node stages, publishes,
# unpublishes and unstages another volume meanwhile.
expect_refused_alone() { # volume snapshot-before
    local pod refused="has format version 2, newer than this plugin understands (1)"
    pod=$(plugin_pod)
    [[ $(kc -n kube-system logs "$pod" -c blocknode | grep -cF "$refused") -ge 1 ]] ||
        kube_fail "the previous release on $NODE_NAME did not log that $1's record is of a newer format"
    wait_until "kubelet's NodeGetVolumeStats of $1 to be refused" 60 stats_refused "$pod" "$1" ||
        kube_fail "no NodeGetVolumeStats of $1 was refused FAILED_PRECONDITION on $NODE_NAME"
    expect_eq "blocknode_unreadable_staging_records on $NODE_NAME" 1 "$(unreadable_records_metric)"
    local records
    records=$(node_status_json "$NODE_NAME" | python3 -c 'import json, sys
for r in json.load(sys.stdin)["unreadableRecords"]:
    print(r["file"].rsplit("/", 1)[-1], "format version 2" in r["reason"], r["reason"])')
    expect_eq "the unreadable records blocknode status lists on $NODE_NAME" \
        "$(record_file_name "$1") True" "$(cut -d' ' -f1,2 <<<"$records")"
    kube_log "blocknode status on $NODE_NAME, unreadable: $(cut -d' ' -f3- <<<"$records")"
    expect_same "the volumes in use but $1's status on $NODE_NAME, before the upgrade and after the rollback" \
        "$(grep -v -e "^$NODE_NAME status healthy " -e "^$NODE_NAME status $1 " <<<"$2")" \
        "$(upgrade_snapshot | grep -v "^$NODE_NAME status healthy ")"
    expect_writers_went_on
    local dev
    dev=$(ext4_pod upgrade-meanwhile "busybox touch /data/served")
    delete_pod upgrade-meanwhile
    wait_released upgrade-meanwhile "$dev"
    delete_volume upgrade-meanwhile
    kube_log "rolled back across a record format: $1 alone refused on $NODE_NAME (FAILED_PRECONDITION, named in the log, status and metric), every other volume as before, another volume staged and released meanwhile"
}

stats_refused() { # plugin-pod volume
    kc -n kube-system logs "$1" -c blocknode |
        grep -q "NodeGetVolumeStats #[0-9]* FAILED_PRECONDITION (the staging record of volume $2 cannot be read"
}

# blocknode_unreadable_staging_records of the first node's plugin (the chart's metrics.port, 9810, on the host
# network); a scrape reads the unreadable files again.
unreadable_records_metric() {
    curl -fsS http://127.0.0.1:9810/metrics |
        awk '$1 == "blocknode_unreadable_staging_records" { printf "%d\n", $2 }'
}
unreadable_records_metric_is() { [[ $(unreadable_records_metric) == "$1" ]]; }

# Three volumes and four writers: ext4 on each node, raw block ReadWriteMany on both (block 1 from the first node,
# block 2 from the second); sets UPGRADE_DEVICES (the same order as the volumes).
start_writers_on_both_nodes() {
    local fs_a fs_b blk
    fs_a=$(new_loop_device "$UPGRADE_FS_A" 64); fs_b=$(new_loop_device "$UPGRADE_FS_B" 64)
    blk=$(new_loop_device "$UPGRADE_BLOCK" 64)
    UPGRADE_DEVICES=("$fs_a" "$fs_b" "$blk")
    create_volume "$UPGRADE_FS_A" "$fs_a" Filesystem ext4 ReadWriteOnce 64
    create_volume "$UPGRADE_FS_B" "$fs_b" Filesystem ext4 ReadWriteOnce 64
    create_volume "$UPGRADE_BLOCK" "$blk" Block "" ReadWriteMany 64
    create_pod writer-fs-a "$UPGRADE_FS_A" Filesystem "$(fs_writer_script)" false "$NODE_NAME"
    create_pod writer-fs-b "$UPGRADE_FS_B" Filesystem "$(fs_writer_script)" false "$NODE_B_NAME"
    create_pod writer-blk-a "$UPGRADE_BLOCK" Block "$(block_writer_script 1)" false "$NODE_NAME"
    create_pod writer-blk-b "$UPGRADE_BLOCK" Block "$(block_writer_script 2)" false "$NODE_B_NAME"
    local pod
    for pod in writer-fs-a writer-fs-b writer-blk-a writer-blk-b; do wait_pod_ready "$pod" 120; done
}

# The upgrade with docs/operations.md's commands (DocsCommandsUnitTest compares them): the values given at install,
# the new chart. NEW_VERSION is the docs' NEW: the release under test.
upgrade_as_documented() {
    local NEW_VERSION=$RELEASE_VERSION
    (cd "$WORK" && helm_kc get values blocknode -n kube-system -o yaml > my-values.yaml &&
        helm_kc upgrade blocknode "oci://$REGISTRY/blocknode/charts/blocknode" --version "$NEW_VERSION" -n kube-system \
            -f my-values.yaml --plain-http) >"$WORK/logs/helm-upgrade.log" 2>&1 ||
        kube_fail "helm upgrade to $NEW_VERSION failed: $(tail -5 "$WORK/logs/helm-upgrade.log")"
}

expect_unchanged_since() { # snapshot-before what
    expect_same "the volumes in use, before and after $2" "$1" "$(upgrade_snapshot)"
    expect_writers_went_on
}

# The writers deleted: the previous release unpublishes and unstages, on both nodes, what both releases had in
# hand; each writer's last count seen is on its device, or a later one.
release_writers_volumes() {
    kc -n "$TEST_NS" delete pod writer-fs-a writer-fs-b writer-blk-a writer-blk-b --wait=true --timeout=120s >/dev/null ||
        kube_fail "the writers were not deleted"
    local name dev i=0
    for name in "$UPGRADE_FS_A" "$UPGRADE_FS_B" "$UPGRADE_BLOCK"; do
        dev=${UPGRADE_DEVICES[i]}; i=$((i + 1))
        wait_released "$name" "$dev"
        wait_until "volume $name to be released on $NODE_B_NAME" 90 released_b "$name" "$dev" ||
            kube_fail "volume $name not released on $NODE_B_NAME: $(device_mounts_b "$dev") mounts, $(staging_records_b "$name") records"
        wait_detached "$name"
    done
    local fs_a=${UPGRADE_DEVICES[0]} fs_b=${UPGRADE_DEVICES[1]} blk=${UPGRADE_DEVICES[2]}
    expect_counted "the count on $UPGRADE_FS_A's device" "$(file_on_device "$fs_a" count)" "${WRITER_COUNTS[0]}"
    expect_counted "the count on $UPGRADE_FS_B's device" "$(file_on_device "$fs_b" count)" "${WRITER_COUNTS[1]}"
    expect_counted "block 1 of $UPGRADE_BLOCK's device" "$(device_block_direct "$blk" 1)" "${WRITER_COUNTS[2]}"
    expect_counted "block 2 of $UPGRADE_BLOCK's device" "$(device_block_direct "$blk" 2)" "${WRITER_COUNTS[3]}"
    for name in "$UPGRADE_FS_A" "$UPGRADE_FS_B" "$UPGRADE_BLOCK"; do delete_volume "$name"; done
}

# The deployment in place (the release installed by helm, or the manifests after the plugin-restart scenario)
# removed while no volume is in use, and the previous release installed from its chart as install_release installs
# the one under test, its image pushed into the tier's registry first (digest kept: the chart pins it).
replace_deployment_with_previous() {
    local archive chart
    chart=$(echo "$PREVIOUS_DIST"/blocknode-[0-9]*.tgz)
    PREVIOUS_VERSION=${chart##*/blocknode-}; PREVIOUS_VERSION=${PREVIOUS_VERSION%.tgz}
    archive=$PREVIOUS_DIST/blocknode-image-$PREVIOUS_VERSION.oci.tar
    timeout 300 skopeo copy --quiet --preserve-digests --dest-tls-verify=false "oci-archive:$archive" \
        "docker://$REGISTRY/blocknode/blocknode:$PREVIOUS_VERSION" || kube_fail "the previous release's image was not pushed"
    helm_kc uninstall blocknode -n kube-system --wait >/dev/null 2>&1 || true
    kc delete -f "$(render_deployment manifests)" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true
    wait_until "the plugin's pods to go" 120 ! plugin_pod_exists || kube_fail "the plugin's pods did not go"
    helm_kc install blocknode "$chart" -n kube-system --set "image.repository=$REGISTRY/blocknode/blocknode" \
        --set "kubeletRoot=$WORK/kubelet" --set "stateDir=$STATE_DIR" \
        --set "maxVolumesPerNode=$CHART_MAX_VOLUMES" --set "topology.fabric=$CHART_FABRIC" \
        --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true \
        >"$WORK/logs/helm-install-previous.log" 2>&1 ||
        kube_fail "helm install of the previous release failed: $(tail -5 "$WORK/logs/helm-install-previous.log")"
    wait_rolled_to "$REGISTRY/blocknode/blocknode:$PREVIOUS_VERSION@sha256:" at-once
    DEPLOYED_RENDERING=release
    kube_log "previous release $PREVIOUS_VERSION (commit $(basename "$(dirname "$PREVIOUS_DIST")" | cut -c1-12)) installed on both nodes"
}

# The DaemonSet and the controller rolled out with IMAGE (a prefix: the reference pinned by digest) on both nodes,
# each node's new plugin pod started only once the one before it was Ready (RollingUpdate, maxUnavailable 1);
# "at-once" for a new DaemonSet, whose pods all start together.
wait_rolled_to() { # image-prefix [at-once]
    wait_until "the DaemonSet to run $1" 180 plugin_pods_run "$1" ||
        kube_fail "the plugin's pods do not all run $1: $(plugin_pods_table)"
    wait_plugin_ready
    [[ ${2:-} == at-once ]] && return 0
    local ds
    ds=$(kc -n kube-system get ds blocknode-node -o jsonpath='{.spec.updateStrategy.type} {.spec.updateStrategy.rollingUpdate.maxUnavailable}')
    expect_eq "the DaemonSet's update strategy" "RollingUpdate 1" "$ds"
    # creation times and Ready times, in creation order: each pod created no earlier than the one before was Ready.
    plugin_pods_table | sort -k3 | awk '
        NR > 1 && $3 < ready { bad = 1 } { ready = $4 } END { exit bad }' ||
        kube_fail "the plugin's pods were not replaced one node at a time: $(plugin_pods_table)"
    kube_log "plugin pods replaced one node at a time (node, created, Ready): $(plugin_pods_table | sort -k3 |
        awk '{ printf "%s%s %s %s", sep, $1, $3, $4; sep = "; " }')"
}

# One line per plugin pod: node, image, creationTimestamp, Ready since, Ready, and its deletionTimestamp if it
# is being deleted.
plugin_pods_table() {
    local fields='{.spec.nodeName} {.spec.containers[?(@.name=="blocknode")].image} {.metadata.creationTimestamp}'
    fields+=' {.status.conditions[?(@.type=="Ready")].lastTransitionTime} {.status.conditions[?(@.type=="Ready")].status}'
    fields+=' {.metadata.deletionTimestamp}'
    kc -n kube-system get pods -l "$NODE_PLUGIN_PODS" -o jsonpath="{range .items[*]}$fields{\"\\n\"}{end}"
}
# One plugin pod per node, none being deleted, each Ready and running IMAGE.
plugin_pods_run() { # image-prefix
    local table
    table=$(plugin_pods_table)
    [[ $(wc -l <<<"$table") == 2 ]] &&
        awk -v want="$1" 'NF != 5 || $5 != "True" || index($2, want) != 1 { bad = 1 } END { exit bad }' <<<"$table"
}

# What must not change: the workload pods' containers, every mount of the volumes' devices on each node (mount ID
# and mount point), the staging records on each node, what blocknode status in each node's plugin says of each
# volume, the VolumeAttachments.
upgrade_snapshot() {
    local pod dev
    for pod in writer-fs-a writer-fs-b writer-blk-a writer-blk-b; do
        echo "pod $pod $(pod_field "$pod" '{.status.phase} {.status.containerStatuses[0].containerID} restarts={.status.containerStatuses[0].restartCount}')"
    done
    for dev in "${UPGRADE_DEVICES[@]}"; do
        device_mount_ids "$dev" | sed "s#^#$NODE_NAME mount #"
        in_node_b bash -c "$(declare -f device_mount_ids); device_mount_ids $dev" | sed "s#^#$NODE_B_NAME mount #"
    done
    (cd "$STATE_DIR/volumes" && ls) | sed "s#^#$NODE_NAME record #"
    (cd "$NODE_B_DIR/blocknode-state/volumes" && ls) | sed "s#^#$NODE_B_NAME record #"
    node_status_summary "$NODE_NAME"
    node_status_summary "$NODE_B_NAME"
    local name
    for name in "$UPGRADE_FS_A" "$UPGRADE_FS_B" "$UPGRADE_BLOCK"; do
        attachments_of "$name" | sort | sed "s#^#attachment $name #"
    done
}

# Mount ID and mount point of every mount of DEVICE in this mount namespace (as device_mounts counts them).
device_mount_ids() { # device
    local majmin name
    majmin=$(printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")")
    name=${1#/dev/}
    awk -v mm="$majmin" -v root="/$name" '$3 == mm || ($4 == root && $0 ~ / - devtmpfs /) { print $1, $5 }' \
        /proc/self/mountinfo | sort
}

# blocknode status -o json in NODE's plugin pod, reduced to what an upgrade must not change (not updatedAt).
node_status_summary() { # node
    local json
    json=$(node_status_json "$1")
    python3 -c 'import json, sys
s = json.loads(sys.argv[2])
print(sys.argv[1], "status healthy", s["healthy"])
for v in s["volumes"]:
    pubs = " ".join(sorted("%s:%s:%s" % (p["target"], p["mounted"], p["readOnly"]) for p in v["publications"]))
    print(sys.argv[1], "status", v["volumeId"], v["phase"], v["accessType"], v["device"]["majorMinor"],
          v["device"]["present"], v["stagingPath"], v["stagingMounted"], len(v["problems"]), pubs)' "$1" "$json"
}

# blocknode status -o json in NODE's plugin pod (exit 1 says something is not healthy, and the JSON says what).
node_status_json() { # node
    local pod rc=0
    pod=$(plugin_pod "$1")
    kc -n kube-system exec "$pod" -c blocknode -- blocknode status -o json --state-dir "$STATE_DIR" \
        --kubelet-root "$WORK/kubelet" || rc=$?
    ((rc <= 1)) || kube_fail "blocknode status on $1: exit $rc"
}

fs_writer_script() {
    echo "i=0; while :; do i=\$((i + 1)); echo \$i | busybox dd of=/data/count conv=fsync 2>/dev/null ||
        echo \"write \$i failed\"; sleep 0.2; done &"
}
block_writer_script() { # block
    echo "i=0; while :; do i=\$((i + 1))
        echo \$i | busybox dd of=/dev/xvda bs=4096 seek=$1 count=1 conv=sync,fsync oflag=direct 2>/dev/null ||
        echo \"write \$i failed\"; sleep 0.2; done &"
}

# Each writer's count now, in order: fs on A, fs on B (read in the pod), block 1 and 2 (read from the device).
writer_counts() {
    echo "$(pod_exec writer-fs-a busybox cat /data/count) $(pod_exec writer-fs-b busybox cat /data/count)" \
        "$(device_block_direct "${UPGRADE_DEVICES[2]}" 1) $(device_block_direct "${UPGRADE_DEVICES[2]}" 2)"
}

# No writer logged a failed write, and each wrote on since the last look (WRITER_COUNTS).
expect_writers_went_on() {
    local pod
    for pod in writer-fs-a writer-fs-b writer-blk-a writer-blk-b; do
        expect_eq "what writer $pod logged (its failed writes)" "" "$(kc -n "$TEST_NS" logs "$pod" 2>&1)"
    done
    local -a now
    read -ra now <<<"$(writer_counts)"
    kube_log "writers' counts (fs on $NODE_NAME, fs on $NODE_B_NAME, block from each): ${WRITER_COUNTS[*]:-none} -> ${now[*]}, no failed write"
    if [[ -n ${WRITER_COUNTS[*]:-} ]]; then
        local i
        for i in 0 1 2 3; do
            ((now[i] > WRITER_COUNTS[i])) || kube_fail "writer $i did not write on: ${WRITER_COUNTS[i]} then ${now[i]}"
        done
    fi
    WRITER_COUNTS=("${now[@]}")
}

# Two snapshots the same, else the lines that differ.
expect_same() { # what before after
    [[ $2 == "$3" ]] || kube_fail "$1 differ (- before, + after): $(diff <(echo "$2") <(echo "$3") | grep '^[<>]' |
        sed 's/^</-/; s/^>/+/')"
}

expect_counted() { # what count at-least
    [[ $2 =~ ^[0-9]+$ ]] && (($2 >= $3)) || kube_fail "$1: '$2', expected at least $3"
}
