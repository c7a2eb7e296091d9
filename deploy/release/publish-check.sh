#!/usr/bin/env bash
# make publish against a real registry, a version at a time (deploy/release/check.sh runs it on the release it made):
#
#   - a version the registry already holds as another build (its image tag with another digest, or its chart tag
#     with another package) is refused, naming what is there and FORCE=1, and nothing in the registry changes;
#   - FORCE=1 overwrites it, and the registry then serves this release's digest;
#   - the same release published again is not refused (a publish run again after a failure);
#   - the published chart renders with `helm template oci://...` and the helm make publish builds (deploy/release/
#     helm.sh), without --kube-version: its default Kubernetes version meets the chart's kubeVersion.
#
# The registry is Debian's docker-registry on loopback (a port the kernel picks), storage in a temporary directory,
# stopped and removed at exit. The release in DIST was made for another registry: it is re-made for this one
# (release/for-registry.sh). Root (as check.sh). Builds helm once into .tools/bin when it is not there.
#
# usage: deploy/release/publish-check.sh DIST VERSION
set -euo pipefail
what="publish-check"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

(($# == 2)) || fail "usage: deploy/release/publish-check.sh DIST VERSION"
dist=$(realpath "$1")
version=$2
validate=$repo/.tools/bin/deploy-validate
[[ -x $validate ]] || fail "no $validate: make release builds it"
ensure_packages "${publish_check_packages[@]}"

passed=0 failed=0
ok() { passed=$((passed + 1)); log "ok: $*"; }
not_ok() { failed=$((failed + 1)); log "FAILED: $*"; }

work=$(mktemp -d /tmp/bn-publish-check.XXXXXX)
registry_pid=""
cleanup() {
    local rc=$?
    if [[ -n $registry_pid ]]; then
        kill -TERM "$registry_pid" 2>/dev/null || true
        wait "$registry_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

mkdir -p "$work/data"
cat >"$work/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $work/data
http:
  addr: 127.0.0.1:0
EOF
docker-registry serve "$work/config.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
port=""
for _ in $(seq 100); do
    port=$(ss -Hltnp 2>/dev/null | awk -v p="pid=$registry_pid," 'index($0, p) { n = split($4, a, ":"); print a[n]; exit }')
    [[ -n $port ]] && curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && break
    sleep 0.1
done
[[ -n $port ]] || { cat "$work/registry.log" >&2; fail "docker-registry did not listen"; }
registry=127.0.0.1:$port
image=$registry/blocknode/blocknode:$version
chart_ref=$registry/blocknode/charts/blocknode:$version
log "registry on $registry"

# The release, made for this registry.
release=$work/dist
archive=blocknode-image-$version.oci.tar
bash "$repo/deploy/release/for-registry.sh" "$dist" "$version" "$registry/blocknode/blocknode" "$release" ||
    fail "the release could not be made for $registry"
sums() { (cd "$release" && sha256sum -- *.tar *.tgz >SHA256SUMS); }
digest=$(sed -n 's/^  digest: "\(sha256:[0-9a-f]*\)"$/\1/p' <(tar -xzOf "$release/blocknode-$version.tgz" blocknode/values.yaml))

plain=(--tls-verify=false)
registry_digest() { # REF: the digest of the manifest the registry holds for REF
    skopeo inspect --raw "${plain[@]}" "docker://$1" >"$work/manifest" && skopeo manifest-digest "$work/manifest"
}
publish() { # [FORCE]: make publish of the release, its output in $out, its exit code in $rc
    rc=0
    out=$(FORCE=${1:-} bash "$repo/deploy/release/publish.sh" "$registry" "$release" 2>&1) || rc=$?
}

# Another build of the version in the registry: the same image with its manifest converted (another digest).
skopeo copy --quiet --dest-tls-verify=false --format v2s2 "oci-archive:$release/$archive" "docker://$image" ||
    fail "skopeo could not put another build at $image"
other=$(registry_digest "$image")
[[ $other != "$digest" ]] || fail "the converted image kept the release's digest $digest"
publish
if ((rc != 0)) && [[ $out == *"already holds version $version"*"$other"*"FORCE=1 make publish REGISTRY=$registry"* ]] &&
        [[ $(registry_digest "$image") == "$other" ]]; then
    ok "make publish refuses a version whose image tag the registry holds with another digest, and changes nothing"
else
    not_ok "make publish over another build's image (exit $rc): $out"
fi

publish 1
if ((rc == 0)) && [[ $out == *"FORCE=1: overwriting"* ]] && [[ $(registry_digest "$image") == "$digest" ]]; then
    ok "FORCE=1 make publish overwrites it: the registry serves the release's digest"
else
    not_ok "FORCE=1 make publish (exit $rc): $out"
fi

publish
if ((rc == 0)); then ok "the same release published again is not refused"; else not_ok "publishing the same release again (exit $rc): $out"; fi

# Another package of the chart at the version (packaged again: another archive, another layer digest).
mv "$release/blocknode-$version.tgz" "$work/published.tgz"
"$validate" -deploy "$repo/deploy" -package -version "$version" -image-archive "$release/$archive" -out "$release" \
    >/dev/null || fail "the chart was not packaged again"
sums
publish
if ((rc != 0)) && [[ $out == *"the chart $chart_ref (another package"* ]]; then
    ok "make publish refuses a version whose chart tag holds another package"
else
    not_ok "make publish over another chart package (exit $rc): $out"
fi

helm=$(bash "$repo/deploy/release/helm.sh") || fail "no helm CLI"
rc=0
out=$("$helm" template blocknode "oci://$registry/blocknode/charts/blocknode" --version "$version" --plain-http \
    -n kube-system 2>&1) || rc=$?
if ((rc == 0)) && grep -qE "^ +image: \"?$image@$digest\"?$" <<<"$out"; then
    ok "helm template oci://$registry/blocknode/charts/blocknode --version $version renders the release's image (no --kube-version)"
else
    not_ok "helm template of the published chart (exit $rc): $(head -n 5 <<<"$out")"
fi

log "$passed passed, $failed failed in $(elapsed)"
((failed == 0))
