#!/usr/bin/env bash
# A release made for one registry, made again for another without building anything: its image archive copied with
# its digest under REPOSITORY (skopeo: the image's bytes, and so its digest, stay the same), its chart packaged again
# to name REPOSITORY@digest (deploy-validate -package, as make release packages it), SHA256SUMS written. The result
# is what make release IMAGE_REPOSITORY=REPOSITORY would have made of the same tree, but the SBOM, which is left out.
# Used by release/publish-check.sh and by the kube tier, which installs the release tier's release from its own
# loopback registry rather than build another (test-e2e/kube/registry.sh).
#
# usage: deploy/release/for-registry.sh DIST VERSION REPOSITORY OUT
set -euo pipefail
what="for-registry"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

(($# == 4)) || fail "usage: deploy/release/for-registry.sh DIST VERSION REPOSITORY OUT"
dist=$(realpath "$1")
version=$2
repository=$3
out=$4
validate=$repo/.tools/bin/deploy-validate
[[ -x $validate ]] || fail "no $validate: make release builds it"
archive=blocknode-image-$version.oci.tar
[[ -f $dist/$archive ]] || fail "no $archive in $dist"
ensure_packages "${publish_packages[@]}"

mkdir -p "$out"
skopeo copy --quiet --preserve-digests "oci-archive:$dist/$archive" "oci-archive:$out/$archive:$repository:$version" ||
    fail "skopeo could not name the release's image $repository:$version"
"$validate" -deploy "$repo/deploy" -package -version "$version" -image-archive "$out/$archive" -out "$out" \
    >/dev/null || fail "the chart was not packaged for $repository"
(cd "$out" && sha256sum -- *.tar *.tgz >SHA256SUMS)
