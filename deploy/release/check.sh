#!/usr/bin/env bash
# make test's proof of make release (make release-check): a release made the way a maintainer makes one,
# then checked from the outside. Fails when
#   - release.sh accepts a VERSION that is not semver (1.2, v1.2.3, 1.2.3+build) or leaves anything behind then;
#   - the release changes the working tree (git status, the development jar java/target/blocknode.jar);
#   - sha256sum -c SHA256SUMS fails;
#   - deploy/validate -check-release finds a problem: a version that disagrees anywhere (image tag and label,
#     the jar's manifest and vendor_version resource inside the image, chart version/appVersion, the chart's
#     image tag and digest against the archive's), a missing OCI label, an SBOM without one of the image's
#     Debian packages or the jar's Maven dependencies (from mvn dependency:list, not from the SBOM's own
#     source), a chart that does not lint or render, or a file SHA256SUMS does not list;
#   - make publish accepts a REGISTRY other than the one the release's chart names its image in;
#   - scripts/build-host-test.sh fails (make image's and make release's toolchain check), or the image's source
#     label would name a local path or a login;
#   - the image does not serve as the operator's command line (release/cli-check.sh: --version, doctor, status and
#     pv run from it as docs/reference/cli.md shows, on a node and as podman runs it);
#   - make publish into a real registry on loopback overwrites a version it holds as another build without FORCE=1,
#     refuses the same release again, or publishes a chart that helm template cannot render without --kube-version
#     (release/publish-check.sh).
# The release is made at 0.0.0-check, not the development version, so that something still carrying
# 0.1.0-SNAPSHOT (or the chart's 0.1.0) shows. Root (the image build); about 2 minutes warm (and helm's build
# from the Go module proxy once, when .tools/bin has none).
#
# usage: deploy/release/check.sh
set -euo pipefail
what="release-check"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

version=0.0.0-check
out=$repo/.tools/release/check-dist
release=$repo/deploy/release/release.sh
export JAVA_HOME=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}
export MAVEN_OPTS=${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}

# The toolchain check of make image and make release, on a fabricated machine (no root, a second).
bash "$repo/scripts/build-host-test.sh" >&2 || fail "scripts/build-host-test.sh failed"

# The image's source label: an http(s) remote without its login, nothing for a local path or an ssh address.
source_label_of() { # ORIGIN: source_url in a clone whose origin is ORIGIN
    local clone
    clone=$(mktemp -d)
    git -C "$clone" init -q && git -C "$clone" remote add origin "$1"
    (repo=$clone BLOCKNODE_SOURCE_URL='' source_url)
    rm -rf "$clone"
}
for case in "https://git.example.com/blocknode.git|https://git.example.com/blocknode.git" \
    "https://dev:token@git.example.com:8443/blocknode|https://git.example.com:8443/blocknode" \
    "/srv/git/blocknode|" "git@git.example.com:blocknode.git|" "ssh://git@git.example.com/blocknode|"; do
    got=$(source_label_of "${case%%|*}")
    [[ $got == "${case#*|}" ]] || fail "the source label of a clone of ${case%%|*} is '$got', want '${case#*|}'"
done
log "source label: an http(s) origin without its login; none for a local path or ssh"

for bad in 1.2 v1.2.3 1.2.3+build.1 "1.2.3 "; do
    if bash "$release" "$bad" "$out.refused" >/dev/null 2>&1; then
        fail "release.sh accepted VERSION='$bad'"
    fi
    [[ ! -e $out.refused ]] || fail "release.sh refused VERSION='$bad' but wrote $out.refused"
done
log "refuses VERSION=1.2, v1.2.3, 1.2.3+build.1"

tree_state() {
    git -C "$repo" status --porcelain
    git -C "$repo" rev-parse HEAD
    [[ -f $repo/java/target/blocknode.jar ]] && sha256sum "$repo/java/target/blocknode.jar"
    true
}
before=$(tree_state)
tree_id=$(bash "$repo/deploy/release/tree-id.sh")
rm -rf "$out" "$out.tree"
bash "$release" "$version" "$out"
[[ $(tree_state) == "$before" ]] || fail "make release changed the working tree: $(diff <(echo "$before") <(tree_state))"
log "working tree unchanged"

(cd "$out" && sha256sum --quiet --strict -c SHA256SUMS) || fail "sha256sum -c SHA256SUMS failed in $out"
log "sha256sum -c SHA256SUMS: $(wc -l <"$out/SHA256SUMS") files verify"

# The plugin jar's dependencies as Maven resolves them (each module writes target/runtime-dependencies.txt).
(cd "$repo" && timeout 300 mvn -B -q -ntp -pl java -am dependency:list -DincludeScope=runtime \
    -DoutputFile=target/runtime-dependencies.txt >/dev/null) || fail "mvn dependency:list failed"
"$repo/.tools/bin/deploy-validate" -deploy "$repo/deploy" -check-release "$out" -version "$version" \
    -maven-deps "$repo/java/target/runtime-dependencies.txt" || fail "the release in $out does not check out (kept for a look)"
# make publish into a registry the release was not made for is refused before anything is pushed, naming the
# make release that fits (the kube tier publishes a release into the registry it was made for).
if refusal=$(bash "$repo/deploy/release/publish.sh" 127.0.0.1:1 "$out" 2>&1); then
    fail "make publish REGISTRY=127.0.0.1:1 accepted a release made for another registry"
fi
[[ $refusal == *"IMAGE_REPOSITORY=127.0.0.1:1/"* ]] || fail "make publish's refusal names no make release to run: $refusal"
log "make publish refuses a registry the release's chart does not name"
# The release's image as the operator's command line (docs/reference/cli.md), and make publish into a real registry.
bash "$repo/deploy/release/cli-check.sh" "$out/blocknode-image-$version.oci.tar" "$version" ||
    fail "the release's image does not serve as the command line (kept in $out)"
bash "$repo/deploy/release/publish-check.sh" "$out" "$version" || fail "make publish did not behave (kept in $out)"
# The checked release stays, with the identity of the tree it was made from and its version: the kube tier installs it
# (made again for its registry) instead of building another while the tree keeps that identity
# (test-e2e/kube/registry.sh).
echo "$tree_id $version" >"$out.tree"
log "passed in $(elapsed); the release stays in $out for the kube tier"
