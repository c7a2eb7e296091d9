# Pods in user namespaces of their own (hostUsers: false) on ext4 and xfs volumes. The runtime maps the pod's
# ids (in-pod 0 is host uid H, H > 0) and id-maps each volume mount it gives the pod, so that what the pod
# creates is stored under its in-pod ids: a file root makes in the pod is owned by 0 on the disk and through the
# node's own mount, not by H; an id the pod chowns to is kept as is. The volumes then unpublish and unstage
# clean, as any other. A raw block volume cannot be given to such a pod at all: the API server refuses the pod
# (volumeDevices is forbidden "when `hostUsers` is false", Kubernetes 1.37), so nothing reaches the node.
#
# What it needs of the node: Kubernetes >= 1.33 (UserNamespacesSupport on by default; GA and locked on in 1.36),
# containerd >= 2.0 with runc >= 1.2 (build-runtime.sh), and a kernel whose ext4 and xfs support id-mapped mounts
# (Linux >= 6.3 for Kubernetes' design). containerd 1.6 ignores hostUsers: false silently, which is why the
# scenario checks the pod's uid_map instead of trusting the spec.
scenario_user_namespaces() {
    local kind dev token map out
    declare -A devices tokens
    for kind in ext4 xfs block; do
        dev=$(new_loop_device "userns-$kind" 320)
        devices[$kind]=$dev
        token="userns-$kind-$RANDOM$RANDOM"
        tokens[$kind]=$token
        if [[ $kind == block ]]; then
            create_volume "userns-$kind" "$dev" Block "" ReadWriteOncePod 320
            if out=$(create_pod "userns-$kind" "userns-$kind" Block "true" false "" false 2>&1); then
                kube_fail "the API server took a hostUsers: false pod with a raw block volume"
            fi
            [[ $out == *'volumeDevices: Forbidden: when `hostUsers` is false'* ]] ||
                kube_fail "the hostUsers: false pod with a raw block volume was refused, but not for that: $out"
        else
            create_volume "userns-$kind" "$dev" Filesystem "$kind" ReadWriteOncePod 320
            create_pod "userns-$kind" "userns-$kind" Filesystem \
                "echo $token > /data/token && busybox mkdir /data/app && busybox chown 1234:2345 /data/app && busybox sync" \
                false "" false
        fi
    done
    for kind in ext4 xfs; do wait_pod_ready "userns-$kind"; done

    for kind in ext4 xfs; do
        # "0 H 65536" in a user namespace of its own; "0 0 4294967295" would be the host's.
        map=$(pod_exec "userns-$kind" busybox cat /proc/self/uid_map | awk '{ print $1, ($2 > 0 ? "mapped" : $2), $3 }')
        expect_eq "the userns-$kind pod's uid_map" "0 mapped 65536" "$map"
    done
    local publication
    for kind in ext4 xfs; do
        expect_eq "the $kind pod's file" "${tokens[$kind]}" "$(pod_exec "userns-$kind" busybox cat /data/token)"
        expect_eq "owners of the $kind pod's file and directory, in the pod" "0:0 1234:2345" \
            "$(pod_exec "userns-$kind" busybox stat -c %u:%g /data/token /data/app | tr '\n' ' ' | sed 's/ $//')"
        publication=$WORK/kubelet/pods/$(pod_field "userns-$kind" '{.metadata.uid}')/volumes/kubernetes.io~csi/userns-$kind/mount
        expect_eq "owners of the $kind pod's file and directory, on the node" "0:0 1234:2345" \
            "$(stat -c %u:%g "$publication/token" "$publication/app" | tr '\n' ' ' | sed 's/ $//')"
    done
    # The refused block pod left nothing: no attachment, no mount, no staging record.
    expect_eq "VolumeAttachments of userns-block" "" "$(attachments_of userns-block)"
    expect_eq "mounts and staging records of userns-block" "0 0" \
        "$(device_mounts "${devices[block]}") $(staging_records userns-block)"

    for kind in ext4 xfs; do kc -n "$TEST_NS" delete pod "userns-$kind" --wait=false >/dev/null; done
    for kind in ext4 xfs; do
        wait_released "userns-$kind" "${devices[$kind]}"
        wait_detached "userns-$kind"
        expect_eq "the file on the $kind device" "${tokens[$kind]}" "$(file_on_device "${devices[$kind]}" token)"
        expect_eq "owners of the $kind pod's file and directory, on the device" "0:0 1234:2345" \
            "$(owners_on_device "${devices[$kind]}" token app)"
    done
    for kind in ext4 xfs block; do delete_volume "userns-$kind"; done
}

# The uid:gid of each PATH on DEVICE, read through a fresh mount of it once nothing has it mounted.
owners_on_device() { # device path...
    local dir
    dir=$(mktemp -d "$WORK/check.XXXXXX")
    mount -o ro "$1" "$dir" || { rmdir "$dir"; kube_fail "cannot mount $1 to check what the pod wrote"; }
    (cd "$dir" && stat -c %u:%g "${@:2}") | tr '\n' ' ' | sed 's/ $//'
    umount "$dir"; rmdir "$dir"
}
