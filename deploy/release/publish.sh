#!/usr/bin/env bash
# Publishes a release made by make release: its image and its chart, into one OCI registry.
#
#   REGISTRY/PATH:VERSION                    the image (dist/'s OCI archive, pushed by skopeo with its digest kept)
#   oci://REGISTRY/<PATH's parent>/charts    the chart, pushed by helm as an OCI artifact (blocknode:VERSION);
#                                            users install it with helm install oci://.../charts/blocknode
#
# usage: [FORCE=1] deploy/release/publish.sh REGISTRY [DIST]      (make publish REGISTRY=host[:port] [FORCE=1])
#
# The image's repository is baked into the released chart (image.repository, pinned by tag and digest), so the
# chart installs only the image where its values say it is: REGISTRY must be that repository's registry, and a
# release made for another registry is refused with the command that makes the right one
# (make release VERSION=... IMAGE_REPOSITORY=REGISTRY/...). Nothing is pushed before every check passed: the
# files' SHA256SUMS, one release in DIST, the registry, and that the registry holds no other build of the version
# (an image or chart of that tag with other content: refused unless FORCE=1; the same release again is pushed
# again, which changes nothing). After the push the registry's digest of the image must be the chart's.
#
# Credentials are the tools' own: skopeo reads containers' auth file (skopeo login; REGISTRY_AUTH_FILE),
# helm its registry config (helm registry login; HELM_REGISTRY_CONFIG). When REGISTRY_AUTH_FILE is set, both
# read that one file (same format). Nothing here takes, prints or stores a password.
# A registry on this machine's loopback (127.0.0.1, localhost, [::1]) is spoken to over plain HTTP, as
# containerd and Docker do; any other over HTTPS with the system's CAs.
# The sidecars' images are not published: the chart names upstream's (registry.k8s.io/sig-storage).
set -euo pipefail
what="publish"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

(($# >= 1 && $# <= 2)) || fail "usage: deploy/release/publish.sh REGISTRY [DIST]"
registry=$1
dist=$(realpath -m "${2:-$repo/dist}")
# host, host:port, [v6]:port; no scheme and no path: the repository comes from the chart.
[[ $registry =~ ^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?$ ]] ||
    fail "REGISTRY must be host or host:port (no scheme, no path): the image's path comes from the release's chart"

[[ -d $dist ]] || fail "$dist does not exist: make release VERSION=x.y.z writes a release there"
shopt -s nullglob
charts=("$dist"/blocknode-[0-9]*.tgz)
shopt -u nullglob
((${#charts[@]} == 1)) || fail "$dist holds ${#charts[@]} charts (blocknode-VERSION.tgz); a release has one"
chart=${charts[0]}
version=${chart##*/blocknode-}
version=${version%.tgz}
archive=$dist/blocknode-image-$version.oci.tar
[[ -f $archive ]] || fail "$dist has the chart of $version but not its image ${archive##*/}"
[[ -f $dist/SHA256SUMS ]] || fail "$dist has no SHA256SUMS"
(cd "$dist" && sha256sum --quiet --strict -c SHA256SUMS) || fail "$dist's files do not match its SHA256SUMS"

# The chart's values, as the release packaged them (only image.* were set by make release).
values=$(tar -xzOf "$chart" blocknode/values.yaml) || fail "${chart##*/} holds no blocknode/values.yaml"
image_value() { sed -n '/^image:/,/^[^ #]/s/^  '"$1"': *"\{0,1\}\([^"#]*\)"\{0,1\} *$/\1/p' <<<"$values" | head -n1; }
repository=$(image_value repository)
tag=$(image_value tag)
digest=$(image_value digest)
[[ $tag == "$version" ]] || fail "${chart##*/} names the image tag '$tag', not $version: not a release's chart"
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "${chart##*/} pins no image digest: not a release's chart"
if [[ ${repository%%/*} != "$registry" || $repository != */* ]]; then
    fail "the release in $dist names its image $repository, which is not in $registry: make release" \
        "VERSION=$version IMAGE_REPOSITORY=$registry/${repository#*/} first (the chart pins the image where it is pushed)"
fi
path=${repository#*/}
parent=${path%/*}
[[ $parent == "$path" ]] && parent=""
charts_repo=oci://$registry${parent:+/$parent}/charts

tls=()
plain=()
case $registry in
    localhost | localhost:* | 127.* | '[::1]' | '[::1]:'*) tls=(--dest-tls-verify=false); plain=(--plain-http) ;;
esac
auth_skopeo=()
auth_helm=()
if [[ -n ${REGISTRY_AUTH_FILE:-} ]]; then
    [[ -r $REGISTRY_AUTH_FILE ]] || fail "REGISTRY_AUTH_FILE names no readable file"
    auth_skopeo=(--authfile "$REGISTRY_AUTH_FILE")
    auth_helm=(--registry-config "$REGISTRY_AUTH_FILE")
fi

ensure_packages "${publish_packages[@]}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A version is published once: a tag already in the registry is another build's unless it is this release's own
# (a publish run again after a failure), and overwriting it would change what that version installs for everyone
# who has it. Refused, naming what is there, unless FORCE=1. Asked before anything is pushed, image and chart.
# registry_manifest REF: the manifest the registry holds for REF into $work/manifest; false when it has none.
registry_manifest() {
    timeout 120 skopeo inspect --raw --retry-times 3 "${tls_inspect[@]}" "${auth_skopeo[@]}" "docker://$1" \
        >"$work/manifest" 2>"$work/inspect.log"
}
tls_inspect=()
((${#tls[@]} == 0)) || tls_inspect=(--tls-verify=false)
chart_ref=${charts_repo#oci://}/blocknode:$version
chart_layer=sha256:$(sha256sum "$chart" | cut -d' ' -f1)
taken=()
if registry_manifest "$repository:$version"; then
    held=$(skopeo manifest-digest "$work/manifest")
    [[ $held == "$digest" ]] || taken+=("the image $repository:$version (digest $held, this release's is $digest)")
fi
if registry_manifest "$chart_ref"; then
    grep -q "\"$chart_layer\"" "$work/manifest" ||
        taken+=("the chart $chart_ref (another package than ${chart##*/}: its layer is not $chart_layer)")
fi
if ((${#taken[@]} > 0)); then
    there=$(printf '%s; ' "${taken[@]}")
    if [[ ${FORCE:-} != 1 ]]; then
        fail "$registry already holds version $version, another build of it: ${there%; }; publish a new version" \
            "(make release VERSION=...), or overwrite it with FORCE=1 make publish REGISTRY=$registry"
    fi
    log "FORCE=1: overwriting ${there%; }"
fi

helm=$(bash "$repo/deploy/release/helm.sh") || fail "no helm CLI"

log "image: $archive -> $repository:$version"
# --preserve-digests: the manifest goes as it is in the archive, or not at all (the chart pins its digest).
timeout 1800 skopeo copy --quiet --retry-times 3 --preserve-digests "${tls[@]}" "${auth_skopeo[@]}" \
    --digestfile "$work/digest" "oci-archive:$archive" "docker://$repository:$version" ||
    fail "skopeo could not push the image to $repository:$version"
[[ $(cat "$work/digest") == "$digest" ]] ||
    fail "$repository:$version has the digest $(cat "$work/digest") in the registry, the chart pins $digest"

log "chart: ${chart##*/} -> $charts_repo/blocknode:$version"
timeout 600 "$helm" push "${plain[@]}" "${auth_helm[@]}" "$chart" "$charts_repo" >"$work/push.log" 2>&1 || {
    cat "$work/push.log" >&2
    fail "helm could not push the chart to $charts_repo"
}
log "published $version in $(elapsed): helm install blocknode $charts_repo/blocknode --version $version"
