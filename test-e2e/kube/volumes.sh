# Volumes, claims and pods of the kube tier, and what the node shows of them; sourced by run.sh.
#
# Volumes use blocknode's `local` transport on loop devices: statically provisioned PersistentVolumes (the
# address is in the PV's volumeAttributes, as for a SAN LUN), each claimed by a PVC that names it and is bound
# by the controller-manager's PV binder. Pods run the busybox test image and are placed by the scheduler.

STATE_DIR=$WORK/blocknode-state
TEST_NS=kube-tier

# A loop device over a sparse file in $WORK; remembered for release_loop_devices.
new_loop_device() { # name size_mib
    mkdir -p "$WORK/volumes"
    truncate -s "$2M" "$WORK/volumes/$1.img"
    local dev
    dev=$(losetup --find --show "$WORK/volumes/$1.img") || kube_fail "losetup failed for $1"
    echo "$dev" >>"$WORK/loops"
    echo "$dev"
}

release_loop_devices() {
    [[ -f $WORK/loops ]] || return 0
    local dev
    while read -r dev; do losetup -d "$dev" 2>/dev/null || true; done <"$WORK/loops"
    rm -f "$WORK/loops"
}

# A PV on DEVICE and a PVC named like it that claims it by name; waits for the binder to bind them.
# mode: Filesystem or Block; access: ReadWriteOnce, ReadWriteOncePod, ReadOnlyMany...
create_volume() { # name device mode fstype access size_mib [storage class]
    local name=$1 device=$2 mode=$3 fstype=$4 access=$5 size=$6 class=${7:-}
    kc apply -f - >/dev/null <<EOT
apiVersion: v1
kind: PersistentVolume
metadata: {name: $name}
spec:
  capacity: {storage: ${size}Mi}
  volumeMode: $mode
  accessModes: [$access]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: "$class"
  csi:
    driver: $DRIVER
    volumeHandle: $name
    $( [[ $mode == Filesystem ]] && echo "fsType: $fstype" )
    volumeAttributes: {transport: local, devicePath: "$device"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name, namespace: $TEST_NS}
spec:
  volumeMode: $mode
  accessModes: [$access]
  storageClassName: "$class"
  volumeName: $name
  resources: {requests: {storage: ${size}Mi}}
EOT
    wait_until "PVC $name to be Bound" 60 pvc_bound "$name" ||
        kube_fail "PVC $name was not bound by the controller-manager: $(kc -n $TEST_NS describe pvc "$name" | tail -5)"
}

pvc_bound() { [[ $(kc -n "$TEST_NS" get pvc "$1" -o jsonpath='{.status.phase}') == Bound ]]; }

# A pod that runs SCRIPT (sh) with the claim at /data (Filesystem) or /dev/xvda (Block), then idles until
# SIGTERM. readonly=true mounts the claim read-only.
# NODE, when given, places the pod on that node by spec.nodeName: past the scheduler, as a pod of a controller
# that places its own (a DaemonSet's) or a static pod would reach kubelet.
# hostUsers=false runs the pod in a user namespace of its own.
create_pod() { # pod claim mode script [readonly] [node] [hostUsers]
    local pod=$1 claim=$2 mode=$3 script=$4 readonly=${5:-false} node=${6:-} host_users=${7:-true} attach
    if [[ $mode == Block ]]; then attach="volumeDevices: [{name: vol, devicePath: /dev/xvda}]"
    else attach="volumeMounts: [{name: vol, mountPath: /data, readOnly: $readonly}]"; fi
    kc apply -f - >/dev/null <<EOT
apiVersion: v1
kind: Pod
metadata: {name: $pod, namespace: $TEST_NS, labels: {kube-tier: workload}}
spec:
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  ${node:+nodeName: $node}
  hostUsers: $host_users
  containers:
  - name: app
    image: $BUSYBOX_IMAGE
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", $(json_string "$script
trap 'exit 0' TERM; sleep 1000000 & wait")]
    $attach
  volumes:
  - name: vol
    persistentVolumeClaim: {claimName: $claim, readOnly: $readonly}
EOT
}

json_string() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

wait_pod_ready() { # pod [seconds]
    wait_until "pod $1 to be Ready" "${2:-90}" kc -n "$TEST_NS" wait --for=condition=Ready "pod/$1" --timeout=2s ||
        kube_fail "pod $1 is not Ready: $(kc -n "$TEST_NS" describe pod "$1" | tail -8)"
}

pod_exec() { kc -n "$TEST_NS" exec "$1" -- "${@:2}"; }

delete_pod() { # pod
    kc -n "$TEST_NS" delete pod "$1" --wait=true --timeout=120s >/dev/null ||
        kube_fail "pod $1 was not deleted: $(kc -n "$TEST_NS" describe pod "$1" | tail -8)"
}

# --- the node's view --------------------------------------------------------------------------------------

# Mounts of DEVICE in the host's mount table: filesystem mounts of it (its major:minor) and bind mounts of its
# device node (block publications: devtmpfs with the node's name as root).
device_mounts() { # device
    local majmin name
    majmin=$(printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")")
    name=${1#/dev/}
    awk -v mm="$majmin" -v root="/$name" '$3 == mm || ($4 == root && $0 ~ / - devtmpfs /)' /proc/self/mountinfo | wc -l
}

# The name of VOLUME's staging record file: the sha256 of the volume id.
record_file_name() { echo "$(printf '%s' "$1" | sha256sum | cut -d' ' -f1).pb"; } # volume

# The staging records blocknode keeps for VOLUME (0 or 1).
staging_records() { # volume
    [[ -f $STATE_DIR/volumes/$(record_file_name "$1") ]] && echo 1 || echo 0
}

# Waits until kubelet and blocknode released DEVICE completely: no mount, no staging record.
wait_released() { # volume device [seconds]
    wait_until "volume $1 to be unpublished and unstaged" "${3:-90}" released "$1" "$2" ||
        kube_fail "volume $1 not released: $(device_mounts "$2") mounts of $2, $(staging_records "$1") staging records"
}
released() { [[ $(device_mounts "$2") == 0 && $(staging_records "$1") == 0 ]]; }

# The file a pod wrote, read from the device itself once nothing has it mounted.
file_on_device() { # device path
    local dir
    dir=$(mktemp -d "$WORK/check.XXXXXX")
    mount -o ro "$1" "$dir" || { rmdir "$dir"; kube_fail "cannot mount $1 to check what the pod wrote"; }
    cat "$dir/$2" 2>/dev/null || true
    umount "$dir"; rmdir "$dir"
}

# Lines of blocknode's log (the DaemonSet pod's, through the API) with MESSAGE in them.
plugin_log_count() { # text
    local pod
    pod=$(plugin_pod)
    kc -n kube-system logs "$pod" -c blocknode 2>/dev/null | grep -cF "$1" || true
}

# Claim and volume deleted (the PV's reclaim policy is Retain: the device and its data stay).
delete_volume() { # name
    kc -n "$TEST_NS" delete pvc "$1" --wait=true --timeout=60s >/dev/null
    kc delete pv "$1" --wait=true --timeout=60s >/dev/null
}

# A new 64 MiB ext4 volume (ReadWriteOnce) and a pod, named NAME both, that ran SCRIPT on it and is Ready;
# prints the volume's device.
ext4_pod() { # name script
    local dev
    dev=$(new_loop_device "$1" 64)
    create_volume "$1" "$dev" Filesystem ext4 ReadWriteOnce 64
    create_pod "$1" "$1" Filesystem "$2"
    wait_pod_ready "$1"
    echo "$dev"
}

pod_field() { kc -n "$TEST_NS" get pod "$1" -o jsonpath="$2"; }

# Block N (default 0) of 512 bytes of a raw device, up to its first NUL or newline.
device_block() { dd if="$1" bs=512 skip="${2:-0}" count=1 status=none | tr '\0' '\n' | head -1; }
# 4 KiB block N of a raw device read with O_DIRECT (past the page cache, which the two nodes share: what is on the
# device), up to its first NUL or newline.
device_block_direct() { dd if="$1" bs=4096 skip="$2" count=1 iflag=direct status=none | tr '\0' '\n' | head -1; }

expect_eq() { # what expected actual
    [[ $2 == "$3" ]] || kube_fail "$1: expected '$2', got '$3'"
}

# kubelet's log: a mark (its line count) and whether TEXT was logged after it.
kubelet_log_mark() { wc -l <"$WORK/logs/kubelet.log"; }
kubelet_logged_since() { tail -n "+$(($1 + 1))" "$WORK/logs/kubelet.log" | grep -qF "$2"; }

# --- attachments (the controller side) ------------------------------------------------------------------

# The VolumeAttachments of PV NAME, one "node attached" line each (attached: true or false).
attachments_of() { # pv
    kc get volumeattachments -o jsonpath='{range .items[*]}{.spec.source.persistentVolumeName} {.spec.nodeName} {.status.attached}{"\n"}{end}' |
        awk -v pv="$1" '$1 == pv { print $2, ($3 == "true" ? "true" : "false") }'
}
attached_to() { [[ $(attachments_of "$1") == "$2 true" ]]; } # pv node: attached to that node only
detached() { [[ -z $(attachments_of "$1") ]]; } # pv

# Waits until the attach/detach controller and the external-attacher have detached PV NAME from every node.
wait_detached() { # pv [seconds]
    wait_until "PV $1 to be detached" "${2:-90}" detached "$1" ||
        kube_fail "PV $1 is still attached: $(attachments_of "$1" | tr '\n' ';')"
}

# The attach/detach controller's refusal, as an event on POD: "Multi-Attach error for volume ..." up to
# Kubernetes 1.36, "Waiting for detach for volume ..." from 1.37, both naming the pods that hold the volume.
multi_attach_refused() { # pod pv holder
    kc -n "$TEST_NS" get events --field-selector "involvedObject.name=$1,reason=FailedAttachVolume" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null |
        grep -qE "^(Multi-Attach error|Waiting for detach) for volume \"$2\" Volume is already used by pod\(s\) $3\$"
}
