#!/usr/bin/env bash
# The kube tier (make e2e-kube): a real single-node Kubernetes on this machine drives blocknode, deployed the
# way a user deploys it (a release published into a registry on loopback and installed from it by helm, or the
# manifests or the chart's rendering; real sidecars), through the scenarios in scenarios/.
# See README.md beside this script.
#
# usage: test-e2e/kube/run.sh [PLUGIN_JAR]
#   PLUGIN_JAR             accepted for older callers and not used: the image is the release's, whose jar
#                          make release builds from a copy of this working tree
#   KUBE_VERSION=v1.X.Y    the Kubernetes release (default: versions.txt)
#   KUBE_NODE_B_VERSION=v1.X.Y  node B's kubelet (default: versions.txt's kubelet-b, when KUBE_VERSION is versions.txt's
#                          too, else KUBE_VERSION): at most three minor versions older than KUBE_VERSION, not newer
#   KUBE_SCENARIOS="a b"   run only these scenarios (file names in scenarios/ without the number and .sh)
#   KUBE_RENDERING=release|manifests|chart   how blocknode is deployed first (default: release, helm install
#                          from the registry; the redeploy scenario switches to the manifests, or from them to
#                          the chart's rendering)
#   KUBE_PREVIOUS_COMMIT=C the earlier commit whose release the upgrade scenario starts from (default:
#                          versions.txt's previous; built once by build-previous.sh)
#   KUBE_KEEP=1            leave the cluster running at the end (for debugging; tear down with down.sh WORK)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
KUBE_T0=$(date +%s)
NODE_NAME=blocknode-kube
DRIVER=block.csi.blocknode.dev
source "$here/lib.sh"
((EUID == 0)) || kube_fail "root is required (kubelet, containerd, mounts, loop devices)"

# One cluster per machine: two runs at once (a developer's beside make test's) share the API server's and
# kubelets' ports, the CNI bridges, /var/lib/kubelet and /etc/multipath, and fail each other in ways that look
# like plugin bugs. The lock is inherited by the cluster's daemons, so a cluster kept with KUBE_KEEP=1 holds it
# until down.sh stops them; a run waits for the other rather than failing.
KUBE_TIER_LOCK=${KUBE_TIER_LOCK:-/run/lock/blocknode-kube-tier.lock}
exec {tier_lock}>"$KUBE_TIER_LOCK"
if ! flock -n "$tier_lock"; then
    kube_log "another kube tier run (or a cluster kept with KUBE_KEEP=1) holds $KUBE_TIER_LOCK: waiting for it" \
        "($(cat "$KUBE_TIER_LOCK.owner" 2>/dev/null))"
    flock -w "${KUBE_TIER_LOCK_WAIT:-2700}" "$tier_lock" ||
        kube_fail "$KUBE_TIER_LOCK still held after ${KUBE_TIER_LOCK_WAIT:-2700} s ($(cat "$KUBE_TIER_LOCK.owner" 2>/dev/null))"
fi
echo "taken by pid $$ at $(date -u +%FT%TZ) for $repo" >"$KUBE_TIER_LOCK.owner"

bash "$here/deps.sh"
KUBE_BIN=$(bash "$here/build-kubernetes.sh")
kube_log "Kubernetes binaries: $KUBE_BIN ($("$KUBE_BIN/kubelet" --version))"
# Node B's kubelet, at another version: the scenarios that use both nodes run across a version skew.
KUBE_B_VERSION=$(node_b_version)
KUBE_B_BIN=$(bash "$here/build-kubernetes.sh" "$KUBE_B_VERSION" kubelet)
kube_log "node B's kubelet: $KUBE_B_BIN ($("$KUBE_B_BIN/kubelet" --version))"
# containerd finds its shim on PATH; the shim runs the runc the config names.
RUNTIME_BIN=$(bash "$here/build-runtime.sh")
export PATH=$RUNTIME_BIN:$PATH
kube_log "container runtime: $("$RUNTIME_BIN/containerd" --version), $("$RUNTIME_BIN/runc" --version | head -1)"
# The previous release, which the upgrade scenario installs first and upgrades from (built once per pinned commit).
if [[ -z ${KUBE_SCENARIOS:-} || " $KUBE_SCENARIOS " == *" upgrade "* ]]; then
    PREVIOUS_DIST=$(bash "$here/build-previous.sh") || kube_fail "the previous release did not build (build-previous.sh)"
    kube_log "previous release: $PREVIOUS_DIST"
fi

WORK=$(mktemp -d /tmp/bnkube.XXXXXX)
# Searchable by everyone (not listable): the root of a hostUsers: false pod is an unprivileged host uid
# (65536 up), and runc, inside the pod's user namespace, must reach the container's rootfs and kubelet's pod
# files under here; through mktemp's 0700 it got "remount-propagation ... MS_PRIVATE: permission denied".
# containerd makes its own state dir 0711 for this; its parents are ours to open.
chmod 0711 "$WORK"
mkdir -p "$WORK/run" "$WORK/logs"
echo "$KUBE_BIN" >"$WORK/kube-bin"
echo "$RUNTIME_BIN" >"$WORK/runtime-bin"
NODE_IP=$(node_ip)
export WORK KUBE_BIN KUBE_B_BIN RUNTIME_BIN NODE_NAME NODE_IP
source "$here/cluster.sh"
source "$here/deploy.sh"
source "$here/volumes.sh"
source "$here/images.sh"
source "$here/registry.sh"
# Before anything can change it (buildah, containerd, kubelet): what the host looks like now.
record_host_state

SCENARIO_UNDO=()
finish() {
    local rc=$?
    set +e
    if ((rc != 0)); then
        kube_log "FAILED (exit $rc); logs: $WORK/logs"
        dump_diagnostics
    fi
    if [[ ${KUBE_KEEP:-0} == 1 ]]; then
        kube_log "KUBE_KEEP=1: cluster left running; tear it down with: bash $here/down.sh $WORK"
        exit $rc
    fi
    # Each step in a subshell: a failing check (kube_fail exits) must not skip the steps after it. What a scenario
    # that stopped half-way must put back first so its volumes can be torn down (a record it made unreadable).
    ((${#SCENARIO_UNDO[@]} == 0)) || ( "${SCENARIO_UNDO[@]}" )
    ( teardown_volumes_and_plugin ) || rc=1
    ( cluster_down )
    ( release_loop_devices )
    ( check_nothing_left ) || rc=1
    if ((rc != 0)); then
        rm -rf "$repo/test-e2e/target/kube-logs"
        mkdir -p "$repo/test-e2e/target" && cp -r "$WORK/logs" "$repo/test-e2e/target/kube-logs" &&
            kube_log "logs kept in test-e2e/target/kube-logs"
    fi
    # Never rm -r through a mount point (a bind of a host directory would be emptied with it).
    if findmnt -rn -o TARGET | grep -q "^$WORK"; then kube_log "something is still mounted under $WORK: left in place"
    else rm -rf --one-file-system "$WORK"; fi
    kube_log "$( ((rc == 0)) && echo "passed" || echo "FAILED"), torn down"
    exit $rc
}
trap finish EXIT

up_registry
release_and_publish
build_test_images
cluster_up
import_images "${IMAGE_ARCHIVES[@]}"
up_kubelet
wait_node_ready
kube_log "node $NODE_NAME Ready (Kubernetes $("$KUBE_BIN/kubectl" version --client -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | head -1))"
up_node_b
kube_log "node $NODE_B_NAME Ready (its own kubelet and containerd, in namespaces of its own)"
check_kubelet_versions
deploy_blocknode "${KUBE_RENDERING:-release}"
kube_log "blocknode deployed ($DEPLOYED_RENDERING) and registered with kubelet"
report_rss

passed=0
skipped=()
for file in "$here"/scenarios/[0-9]*.sh; do
    name=$(basename "$file" .sh); name=${name#*-}
    if [[ -n ${KUBE_SCENARIOS:-} && " $KUBE_SCENARIOS " != *" $name "* ]]; then continue; fi
    start=$(date +%s)
    kube_log "scenario $name"
    source "$file"
    SCENARIO_SKIPPED=""
    "scenario_${name//-/_}"
    if [[ -n $SCENARIO_SKIPPED ]]; then skipped+=("$name"); continue; fi
    kube_log "scenario $name passed in $(( $(date +%s) - start )) s"
    passed=$((passed + 1))
done
kube_log "$passed scenarios passed, ${#skipped[@]} skipped${skipped:+ (${skipped[*]})} on Kubernetes $("$KUBE_BIN/kubelet" --version | cut -d' ' -f2) (node B's kubelet $KUBE_B_VERSION)"
report_rss
