# Never on two nodes: a ReadWriteOnce volume held by a pod on another node is not attached to this one. The
# attach/detach controller refuses it (a "Multi-Attach error" event on the second pod), so kubelet never stages
# it and the pod waits (the event's words changed in 1.37, see multi_attach_refused); once the first node has let go, the volume is detached there, attached here, and the
# pod starts with the data.
#
# The other node here is a Node object without a kubelet, so that the refusal is seen with the other side
# written exactly (its status.volumesInUse); two-nodes (17) shows the same between two real kubelets. It carries the annotation
# kubelet sets for controller-managed attach/detach and a CSINode naming blocknode's node ID, as a registered
# node does, so the controller side attaches volumes to it for real (ControllerPublishVolume through the
# external-attacher). What its kubelet would report, the volumes it has mounted (status.volumesInUse), is
# written by the scenario.
GHOST_NODE=blocknode-ghost

scenario_multi_attach() {
    local dev token="multi-$RANDOM$RANDOM"
    create_ghost_node
    dev=$(new_loop_device multi-attach 64)
    create_volume multi-attach "$dev" Filesystem ext4 ReadWriteOnce 64

    # The other node holds it: attached there, and mounted as far as the cluster knows.
    create_pod_on_ghost holder multi-attach
    wait_until "PV multi-attach to be attached to $GHOST_NODE" 60 attached_to multi-attach "$GHOST_NODE" ||
        kube_fail "the volume was not attached to $GHOST_NODE: $(attachments_of multi-attach | tr '\n' ';')"
    ghost_reports_in_use "\"kubernetes.io/csi/$DRIVER^multi-attach\""

    # A pod here on the same claim: refused before anything reaches this node.
    create_pod second multi-attach Filesystem "echo $token > /data/token && busybox sync"
    wait_until "the Multi-Attach refusal on pod second" 60 multi_attach_refused second multi-attach holder ||
        kube_fail "no Multi-Attach event for pod second: $(kc -n "$TEST_NS" get events --field-selector involvedObject.name=second 2>&1 | tail -5)"
    expect_eq "attachments while the other node holds the volume" "$GHOST_NODE true" "$(attachments_of multi-attach)"
    expect_eq "phase of pod second" Pending "$(pod_field second '{.status.phase}')"
    expect_eq "staging records of multi-attach on this node" 0 "$(staging_records multi-attach)"
    expect_eq "mounts of the device on this node" 0 "$(device_mounts "$dev")"

    # The other node lets go: its kubelet unmounted (volumesInUse empty) and its pod is gone.
    ghost_reports_in_use ""
    kc -n "$TEST_NS" delete pod holder --grace-period=0 --force >/dev/null 2>&1
    wait_until "PV multi-attach to move to $NODE_NAME" 120 attached_to multi-attach "$NODE_NAME" ||
        kube_fail "the volume did not move to $NODE_NAME: $(attachments_of multi-attach | tr '\n' ';')"
    wait_pod_ready second
    expect_eq "staging records of multi-attach once it is here" 1 "$(staging_records multi-attach)"

    delete_pod second
    wait_released multi-attach "$dev"
    wait_detached multi-attach
    expect_eq "the file pod second wrote" "$token" "$(file_on_device "$dev" token)"
    delete_volume multi-attach
    delete_ghost_node
}

create_ghost_node() {
    kc apply -f - >/dev/null <<EOT
apiVersion: v1
kind: Node
metadata:
  name: $GHOST_NODE
  labels: {kubernetes.io/hostname: $GHOST_NODE, kubernetes.io/os: linux}
  annotations: {volumes.kubernetes.io/controller-managed-attach-detach: "true"}
spec:
  # Nothing is scheduled here by accident: only pods that name it and tolerate this.
  taints: [{key: kube-tier/no-kubelet, effect: NoSchedule}]
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: $GHOST_NODE}
spec:
  drivers: [{name: $DRIVER, nodeID: $GHOST_NODE}]
EOT
}

delete_ghost_node() {
    kc delete csinode "$GHOST_NODE" --ignore-not-found >/dev/null
    kc delete node "$GHOST_NODE" --ignore-not-found >/dev/null
}

# A pod bound to the ghost node by name (no scheduler, no kubelet: it stays Pending there, as a pod on a node
# that has not started it yet).
create_pod_on_ghost() { # pod claim
    kc apply -f - >/dev/null <<EOT
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $TEST_NS, labels: {kube-tier: workload}}
spec:
  nodeName: $GHOST_NODE
  tolerations: [{operator: Exists}]
  automountServiceAccountToken: false
  containers:
  - {name: app, image: $BUSYBOX_IMAGE, imagePullPolicy: Never, command: [sleep, "1000000"],
     volumeMounts: [{name: vol, mountPath: /data}]}
  volumes:
  - {name: vol, persistentVolumeClaim: {claimName: $2}}
EOT
}

# What the ghost node's kubelet would report: the unique names of the volumes it has mounted, JSON strings.
ghost_reports_in_use() { # comma-separated JSON strings, or ""
    kc patch node "$GHOST_NODE" --subresource=status --type=merge \
        -p "{\"status\": {\"volumesInUse\": [$1]}}" >/dev/null
}
