#!/usr/bin/env bash
# A release of blocknode: everything a user installs, with one version everywhere, into dist/ (or OUT):
#
#   blocknode-image-VERSION.oci.tar   the plugin's image, an OCI archive (deploy/image/build.sh), tagged VERSION
#                                     and labelled org.opencontainers.image.* (version, revision, created, ...)
#   blocknode-image-VERSION.cdx.json  its SBOM, CycloneDX JSON: the image's Debian packages, its Java runtime,
#                                     the plugin jar and the jar's Java dependencies
#   blocknode-VERSION.tgz             the Helm chart, packaged and linted by Helm's own code, its values naming
#                                     the image by tag and digest
#   SHA256SUMS                        over the three, for sha256sum -c
#
# usage: deploy/release/release.sh VERSION [OUT]      (make release VERSION=x.y.z)
#
# VERSION must be semantic versioning (x.y.z[-prerelease]); it becomes Maven's ${revision} (pom.xml), so the
# jar's manifest and GetPluginInfo's vendor_version carry it, and from the jar the image's tag and labels.
# The working tree is not changed: the jar is built in a copy of it (its tracked and untracked, not ignored,
# files) under .tools/release/; the image's revision label is HEAD, with "-dirty" when the tree has
# uncommitted changes. IMAGE_REPOSITORY names the image (default: the chart's image.repository);
# BLOCKNODE_SOURCE_URL its source label (see deploy/image/build.sh). Root (the image build).
set -euo pipefail
what="release"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

(($# >= 1 && $# <= 2)) || fail "usage: deploy/release/release.sh VERSION [OUT]"
version=$1
out=$(realpath -m "${2:-$repo/dist}")

# A JDK 25 and Go, before anything is built: without them, what to install and where from (scripts/build-host.sh).
bash "$repo/scripts/build-host.sh" release || exit 1

# The validator does the release's Helm and SBOM work (deploy/validate/release.go); built first, so that a
# version that is not semver is refused before anything is built.
validate=$repo/.tools/bin/deploy-validate
(cd "$repo/deploy/validate" && timeout 600 go build -o "$validate" .) || fail "deploy/validate did not build"
"$validate" -semver "$version" || fail "refusing VERSION=$version"
require_root

export JAVA_HOME=${JAVA_HOME:-$("$repo/scripts/find-jdk.sh")}
export MAVEN_OPTS=${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}
repository=${IMAGE_REPOSITORY:-$(sed -n '/^image:/,/^[^ #]/s/^  repository: *//p' "$repo/deploy/helm/blocknode/values.yaml")}
[[ -n $repository ]] || fail "no image.repository in the chart's values.yaml: set IMAGE_REPOSITORY"

# Refuse to mix with anything but an earlier release's files in OUT.
if [[ -d $out ]]; then
    for f in "$out"/* "$out"/.[!.]*; do
        [[ -e $f ]] || continue
        case ${f##*/} in
            blocknode-*.oci.tar | blocknode-*.cdx.json | blocknode-*.tgz | SHA256SUMS) ;;
            *) fail "$out holds ${f##*/}, which is not a release's file: remove it or give another OUT" ;;
        esac
    done
fi

mkdir -p "$repo/.tools/release"
work=$(mktemp -d "$repo/.tools/release/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
src=$work/src
dist=$work/dist
mkdir -p "$src" "$dist"

log "copying the working tree to $src"
(cd "$repo" && bash deploy/release/tree-id.sh --files | tar --null -T - -cf -) | tar -C "$src" -xf -

log "building the jar $version and its dependencies' bom (Maven, -Drevision=$version)"
if ! (cd "$src" && timeout 900 mvn -B -q -ntp -Drevision="$version" -pl java -am -DskipTests \
        -DoutputFormat=json -DincludeTestScope=false -DincludeSystemScope=false \
        package org.cyclonedx:cyclonedx-maven-plugin:makeBom) >"$work/maven.log" 2>&1; then
    tail -n 40 "$work/maven.log" >&2
    fail "the Maven build failed"
fi
jar=$src/java/target/blocknode.jar

image=$dist/blocknode-image-$version.oci.tar
read -r _ ref < <(bash "$repo/deploy/image/build.sh" --repository "$repository" --output "$image" "$jar") ||
    fail "the image did not build"
[[ $ref == "$repository:$version" ]] || fail "the image is $ref, not $repository:$version"

"$validate" -sbom "$dist/blocknode-image-$version.cdx.json" -version "$version" -image-archive "$image" \
    -maven-bom "$src/java/target/bom.json" >&2 || fail "the SBOM was not made"
chart=$("$validate" -deploy "$src/deploy" -package -version "$version" -image-archive "$image" -out "$dist") ||
    fail "the chart was not packaged"
log "chart: $chart"
(cd "$dist" && sha256sum -- * >SHA256SUMS)

mkdir -p "$out"
rm -f "$out"/blocknode-*.oci.tar "$out"/blocknode-*.cdx.json "$out"/blocknode-*.tgz "$out"/SHA256SUMS
mv "$dist"/* "$out"/
log "$out: $(cd "$out" && du -h -- * | awk '{ printf "%s %s, ", $2, $1 }')in $(elapsed)"
