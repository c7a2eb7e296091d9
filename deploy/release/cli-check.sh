#!/usr/bin/env bash
# The release's image as the operator's command line (docs/reference/cli.md): the commands run from the image with
# its own Java, no JDK or jar of the machine's, the two ways that page gives.
#
#   on a node     ctr -n k8s.io run --rm --privileged --net-host $MOUNTS $IMAGE blocknode-cli blocknode COMMAND,
#                 the host paths the DaemonSet mounts given as $MOUNTS (here: stand-ins, an initiator name and an
#                 empty state directory): --version says the release's version, doctor reads the mounted files and
#                 calls its tools the image's, status reads the state directory, pv reads standard input
#   on a laptop   podman/docker run --rm -i IMAGE pv - < luns.yaml: the image's entrypoint with the arguments after
#                 it (ctr runs exactly that argv here: the entrypoint read from the archive's image config)
#
# pv's output must be what PvCommandUnitTest checks in (deploy/validate/testdata/pv/local.yaml), and the page must
# still show the command lines run here. The image is imported into a throwaway containerd (deploy/image/lib.sh),
# removed at exit with everything it ran. Root. deploy/release/check.sh runs it on the release it made.
#
# usage: deploy/release/cli-check.sh ARCHIVE VERSION
set -euo pipefail
what="cli-check"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

(($# == 2)) || fail "usage: deploy/release/cli-check.sh ARCHIVE VERSION"
archive=$(realpath "$1")
version=$2
page=$repo/docs/reference/cli.md
require_root
ensure_packages "${check_packages[@]}"

passed=0 failed=0
ok() { passed=$((passed + 1)); log "ok: $*"; }
not_ok() { failed=$((failed + 1)); log "FAILED: $*"; }

# The command lines of the page that this script runs (the node's with its stand-in paths).
for line in 'ctr -n k8s.io run --rm --privileged --net-host $MOUNTS $IMAGE blocknode-cli blocknode doctor' \
    'ctr -n k8s.io run --rm --privileged --net-host $MOUNTS $IMAGE blocknode-cli blocknode status' \
    'podman run --rm -i REGISTRY/blocknode/blocknode:X.Y.Z pv - < luns.yaml > pvs.yaml' \
    'podman run --rm REGISTRY/blocknode/blocknode:X.Y.Z --version'; do
    if grep -qF -- "$line" "$page"; then ok "docs/reference/cli.md shows: $line"; else not_ok "docs/reference/cli.md lacks: $line"; fi
done

# The archive's image: its name (index.json) and its entrypoint (the manifest's config blob).
blob() { tar -xOf "$archive" "blobs/sha256/${1#sha256:}"; }
index=$(tar -xOf "$archive" index.json)
image=$(grep -o '"org.opencontainers.image.ref.name":"[^"]*"' <<<"$index" | cut -d'"' -f4)
manifest=$(grep -o '"digest":"sha256:[0-9a-f]*"' <<<"$index" | head -n1 | cut -d'"' -f4)
config=$(blob "$manifest" | grep -o '"config":{[^}]*}' | grep -o 'sha256:[0-9a-f]*')
# A JSON array of plain strings (no quote, comma or backslash in them: the Containerfile's ENTRYPOINT).
mapfile -t entrypoint < <(blob "$config" | grep -o '"Entrypoint":\[[^]]*\]' | sed 's/^"Entrypoint":\[//; s/\]$//' |
    tr ',' '\n' | sed 's/^"//; s/"$//')
[[ -n $image && ${#entrypoint[@]} -gt 0 ]] || fail "$archive: no image name or no entrypoint in it"
log "image $image, entrypoint ${entrypoint[*]}"

dir=$(mktemp -d /tmp/bn-cli-check.XXXXXX)
cleanup() {
    local rc=$?
    containerd_down "$dir" || rc=1
    exit "$rc"
}
trap cleanup EXIT
containerd_up "$dir"
started=$SECONDS
ctr_ images import "$archive" >/dev/null || fail "ctr images import $archive failed"
log "imported in $((SECONDS - started)) s"

# The node's stand-ins, at the paths the page mounts.
iqn=iqn.2026-11.dev.blocknode:cli-check
host=$dir/host
mkdir -p "$host/etc/iscsi" "$host/etc/multipath" "$host/var/lib/blocknode" "$host/var/lib/kubelet"
echo "InitiatorName=$iqn" >"$host/etc/iscsi/initiatorname.iscsi"
mounts=()
for p in /etc/iscsi /etc/multipath /var/lib/blocknode /var/lib/kubelet; do
    mounts+=(--mount "type=bind,src=$host$p,dst=$p,options=rbind:rw")
done
n=0
# run_in_image [--stdin TEXT] CTR_RUN_ARGS... -- ARGV...: one container of the image, removed after; its standard
# output in $out, its standard error in $err (kept apart: pv's YAML is compared as printed), its exit code in $rc.
# Standard input is written only once the task runs: ctr (containerd 1.6) closes the container's standard input at
# the end of its own only if that end comes after the task was created; a short input that ends before leaves the
# container reading for ever. (podman and docker have no such race; kubectl exec -i neither.)
run_in_image() {
    local stdin="" args=() id pid w _
    if [[ $1 == --stdin ]]; then stdin=$2; shift 2; fi
    while [[ $1 != -- ]]; do args+=("$1"); shift; done
    shift
    n=$((n + 1))
    # Unique on this machine: runc keeps its state under /run/containerd/runc/k8s.io whatever containerd does.
    id=blocknode-cli-${dir##*.}-$n
    rc=0
    rm -f "$dir/stdin"
    mkfifo "$dir/stdin"
    exec {w}<>"$dir/stdin" # a writer from the start: ctr's open of the FIFO does not wait
    ctr_ run --rm "${args[@]}" "$image" "$id" "$@" <"$dir/stdin" >"$dir/out" 2>"$dir/err" {w}>&- &
    pid=$!
    for _ in $(seq 300); do
        [[ $(ctr_ tasks ls 2>/dev/null | awk -v id="$id" '$1 == id { print $3 }') == RUNNING ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -z $stdin ]] || printf '%s\n' "$stdin" >&"$w"
    exec {w}>&-
    wait "$pid" || rc=$?
    out=$(cat "$dir/out")
    err=$(cat "$dir/err")
}
node=(--privileged --net-host "${mounts[@]}")
shown() { echo "exit $rc, stdout: $out; stderr: $err"; }

run_in_image "${node[@]}" -- blocknode --version
if ((rc == 0)) && [[ $out == "blocknode $version" ]]; then ok "on a node: blocknode --version says $out"; else not_ok "blocknode --version: $(shown)"; fi

run_in_image "${node[@]}" -- blocknode doctor -o json
# 0, 1 or 2: ready, warnings, errors (what the stand-in node lacks); 3 would be a usage error.
if ((rc <= 2)) && [[ $out == *'"transport":"iscsi","setUp":true'* && $out == *"initiator name $iqn"* &&
        $out == *"the image's iscsiadm is "* ]]; then
    ok "on a node: blocknode doctor reads the mounted initiator name and calls its iscsiadm the image's (exit $rc)"
else
    not_ok "blocknode doctor: $(shown)"
fi

run_in_image "${node[@]}" -- blocknode status
if ((rc == 0)) && [[ $out == "no problems: 0 volume(s), all healthy" ]]; then
    ok "on a node: blocknode status reads the mounted state directory: $out"
else
    not_ok "blocknode status: $(shown)"
fi

# pv from standard input, on the node and as podman or docker run it (the entrypoint, then the arguments).
luns=$'- name: scratch\n  size: 10Gi\n  devicePath: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n  fsType: xfs'
want=$(tail -n +2 "$repo/deploy/validate/testdata/pv/local.yaml")
run_in_image --stdin "$luns" "${node[@]}" -- blocknode pv --claim --namespace apps -
if ((rc == 0)) && [[ $out == "$want" ]]; then ok "on a node: blocknode pv - prints the PV and its claim"; else not_ok "blocknode pv - on a node: $(shown)"; fi
run_in_image --stdin "$luns" -- "${entrypoint[@]}" pv --claim --namespace apps -
if ((rc == 0)) && [[ $out == "$want" ]]; then ok "as podman runs it: IMAGE pv - prints the same"; else not_ok "IMAGE pv -: $(shown)"; fi
run_in_image -- "${entrypoint[@]}" --version
if ((rc == 0)) && [[ $out == "blocknode $version" ]]; then ok "as podman runs it: IMAGE --version says $out"; else not_ok "IMAGE --version: $(shown)"; fi

log "$passed passed, $failed failed in $(elapsed)"
((failed == 0))
