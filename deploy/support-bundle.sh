#!/usr/bin/env bash
# blocknode's support bundle: what a maintainer needs to understand a stuck volume, from every node, in one
# archive, with nothing but kubectl (and tar) on the machine that runs it.
#
#   deploy/support-bundle.sh [-n NAMESPACE] [-o FILE.tar.gz] [--since DURATION] [-- KUBECTL_ARGS...]
#
#   -n         the namespace of blocknode's DaemonSet and controller (default kube-system)
#   -o         the archive to write (default blocknode-support-<UTC time>.tar.gz)
#   --since    how much of each container's log (default 24h; previous containers' logs are taken whole)
#   after --   arguments for every kubectl call (--context, --kubeconfig, ...)
#
# For every blocknode node pod: the logs of its three containers (and of their previous instances, when a
# container restarted), `blocknode status -o json` and `blocknode doctor -o json` run in its plugin container;
# for the cluster: the CSIDriver, every CSINode, the VolumeAttachments, the PVs of blocknode's driver and their
# PVCs, the DaemonSet and controller Deployment, and the recent events of the namespaces those use. Secrets are
# never collected: PVs name their Secrets only by reference, and anything shaped like a CHAP or DH-HMAC-CHAP
# secret or a password is masked in every file before it is archived (belt and braces: the plugin keeps secrets
# out of its logs). A step that fails is recorded in errors.txt and the bundle goes on.
set -uo pipefail

namespace=kube-system
out=""
since=24h
kubectl_args=()
while (($#)); do
    case $1 in
        -n) namespace=${2:?-n needs a namespace}; shift 2 ;;
        -o) out=${2:?-o needs a file}; shift 2 ;;
        --since) since=${2:?--since needs a duration}; shift 2 ;;
        --) shift; kubectl_args=("$@"); break ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "support-bundle: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
command -v kubectl >/dev/null || { echo "support-bundle: kubectl is needed" >&2; exit 2; }
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=${out:-blocknode-support-$stamp.tar.gz}
driver_label=app.kubernetes.io/name=blocknode
node_pods=$driver_label,app.kubernetes.io/component=node-plugin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bundle=$work/blocknode-support-$stamp
mkdir -p "$bundle/cluster" "$bundle/nodes"
k() { kubectl "${kubectl_args[@]}" "$@"; }
# step FILE COMMAND...: the command's output into FILE (under the bundle); a failure is noted, not fatal.
step() {
    local file=$bundle/$1; shift
    mkdir -p "$(dirname "$file")"
    if ! "$@" >"$file" 2>"$file.err"; then
        echo "${file#"$bundle"/}: $* failed: $(head -c 300 "$file.err")" >>"$bundle/errors.txt"
    fi
    [[ -s $file.err ]] || rm -f "$file.err"
}

# report FILE COMMAND...: as step, for `blocknode status` and `doctor`, whose exit codes 1 and 2 are findings (a
# volume with a problem, a node not ready), not failures: the code is kept beside the report.
report() {
    local file=$bundle/$1 rc=0; shift
    mkdir -p "$(dirname "$file")"
    "$@" >"$file" 2>"$file.err" || rc=$?
    echo "$rc" >"$file.exit"
    if ((rc > 2)); then
        echo "${file#"$bundle"/}: $* failed (exit $rc): $(head -c 300 "$file.err")" >>"$bundle/errors.txt"
    fi
    [[ -s $file.err ]] || rm -f "$file.err"
}

echo "support-bundle: collecting into $out"
step version.txt k version
driver=$(k get csidriver -l "$driver_label" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
driver=${driver:-block.csi.blocknode.dev}
step cluster/csidriver.yaml k get csidriver "$driver" -o yaml
step cluster/csinodes.yaml k get csinodes -o yaml
step cluster/volumeattachments.yaml k get volumeattachments -o yaml
step cluster/daemonsets.yaml k -n "$namespace" get daemonsets -l "$driver_label" -o yaml
step cluster/deployments.yaml k -n "$namespace" get deployments -l "$driver_label" -o yaml
step cluster/configmaps.yaml k -n "$namespace" get configmaps -l "$driver_label" -o yaml
step cluster/pods.txt k -n "$namespace" get pods -l "$driver_label" -o wide
# The driver's PVs, and the PVCs bound to them, in their own namespaces.
pvs=$(k get pv -o jsonpath='{range .items[?(@.spec.csi.driver=="'"$driver"'")]}{.metadata.name}{" "}{.spec.claimRef.namespace}{"/"}{.spec.claimRef.name}{"\n"}{end}' 2>/dev/null)
namespaces=("$namespace")
if [[ -n $pvs ]]; then
    # shellcheck disable=SC2046 # one PV name per word
    step cluster/pvs.yaml k get pv $(awk '{print $1}' <<<"$pvs") -o yaml
    while read -r _ claim; do
        [[ $claim == /* || $claim == "/" ]] && continue
        step "cluster/pvcs/${claim%%/*}/${claim#*/}.yaml" k -n "${claim%%/*}" get pvc "${claim#*/}" -o yaml
        namespaces+=("${claim%%/*}")
    done <<<"$pvs"
fi
for ns in $(printf '%s\n' "${namespaces[@]}" | sort -u); do
    step "cluster/events/$ns.txt" k -n "$ns" get events --sort-by=.lastTimestamp
done

for pod in $(k -n "$namespace" get pods -l "$node_pods" -o jsonpath='{.items[*].metadata.name}'); do
    node=$(k -n "$namespace" get pod "$pod" -o jsonpath='{.spec.nodeName}')
    dir=nodes/${node:-$pod}
    mkdir -p "$bundle/$dir" && echo "$pod" >"$bundle/$dir/pod.txt"
    for container in $(k -n "$namespace" get pod "$pod" -o jsonpath='{.spec.containers[*].name}'); do
        step "$dir/logs/$container.log" k -n "$namespace" logs "$pod" -c "$container" --since="$since" --timestamps
        restarts=$(k -n "$namespace" get pod "$pod" \
            -o jsonpath='{.status.containerStatuses[?(@.name=="'"$container"'")].restartCount}')
        if [[ ${restarts:-0} != 0 ]]; then
            step "$dir/logs/$container.previous.log" k -n "$namespace" logs "$pod" -c "$container" --previous --timestamps
        fi
    done
    # The plugin's own view: its flags say where the state and kubelet's root are.
    args=$(k -n "$namespace" get pod "$pod" -o jsonpath='{.spec.containers[?(@.name=="blocknode")].args}')
    state=$(grep -o '"--state-dir=[^"]*"' <<<"$args" | sed 's/.*=//; s/"$//')
    root=$(grep -o '"--kubelet-root=[^"]*"' <<<"$args" | sed 's/.*=//; s/"$//')
    report "$dir/status.json" k -n "$namespace" exec "$pod" -c blocknode -- blocknode status -o json \
        --state-dir "${state:-/var/lib/blocknode}" --kubelet-root "${root:-/var/lib/kubelet}"
    report "$dir/doctor.json" k -n "$namespace" exec "$pod" -c blocknode -- blocknode doctor -o json \
        --kubelet-root "${root:-/var/lib/kubelet}"
done

# Masks every value of a key that names a secret (CHAP and DH-HMAC-CHAP secrets, passwords, keys), in YAML
# (`key: value`), JSON (`"key":"value"`) and iscsid's record style (`key = value`).
find "$bundle" -type f -exec sed -i -E \
    -e 's/(([Pp]assword|[Ss]ecret|dhchap[A-Za-z_]*[Kk]ey|chap[A-Za-z_]*[Pp]assword)[A-Za-z_.-]*"?[[:space:]]*[:=][[:space:]]*"?)[^",[:space:]}]+/\1<redacted>/g' \
    {} +

tar -C "$work" -czf "$out" "${bundle##*/}" || { echo "support-bundle: cannot write $out" >&2; exit 1; }
echo "support-bundle: $out ($(du -h "$out" | cut -f1)); steps that failed: $(wc -l <"$bundle/errors.txt" 2>/dev/null || echo 0)"
