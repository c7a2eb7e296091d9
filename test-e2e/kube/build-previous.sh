#!/usr/bin/env bash
# Builds the previous release of blocknode, the one the upgrade scenario installs first and upgrades from: `make
# release` as it was at a pinned earlier commit (versions.txt's `previous` entry), into previous/<commit>/dist of the
# machine-wide cache (scripts/cache.sh: a new clone, as CI's, reuses it), and prints that directory on stdout; what it
# did goes to stderr. A complete build already there (its SHA256SUMS verified) is reused.
#
# usage: test-e2e/kube/build-previous.sh [COMMIT]      (default: KUBE_PREVIOUS_COMMIT, else versions.txt's)
#
# The commit is built from a clone of this repository (git clone --shared: the objects are this checkout's, nothing
# of the checkout is touched) checked out at the commit, with that commit's own release script, so the image and
# chart are what that commit released: its jar, its Containerfile, its chart. The image is named by the chart's
# default repository; the scenario pushes it into the tier's registry (the digest kept) and installs the chart with
# image.repository set there. The image's base root and Java runtime caches (the machine-wide images/ cache, keyed by
# their recipes) are given to that commit's scripts by hard links, so an unchanged recipe is not bootstrapped again.
# The commit must be in this clone's history (CI clones main with its full history).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
commit=${1:-${KUBE_PREVIOUS_COMMIT:-$(awk '$1 == "previous" { print $2 }' "$here/versions.txt")}}
version=${PREVIOUS_VERSION:-0.0.0-previous}
[[ $commit =~ ^[0-9a-f]{40}$ ]] || { echo "kube: previous commit '$commit' is not a full commit id" >&2; exit 1; }
git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || {
    echo "kube: commit $commit (the previous release) is not in this clone: fetch main's full history" >&2
    exit 1
}

source "$here/build-lock.sh"
out=$blocknode_cache/previous/$commit
dist=$out/dist
take_build_lock "$out"
if [[ -s $dist/SHA256SUMS ]] && (cd "$dist" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1); then
    echo "kube: previous release ${commit:0:12} present in $dist" >&2
    echo "$dist"
    exit 0
fi

t0=$SECONDS
src=$out/src
rm -rf "$src" "$dist" "$out/dist.tmp"
trap 'rm -rf "$src"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
git clone -q --shared --no-checkout "$repo" "$src" >&2
git -C "$src" -c advice.detachedHead=false checkout -q --detach "$commit" >&2
# What a release reads of the image cache (base roots and Java runtimes), not the source image's builder caches, nor
# the jar's module list, which that commit's jre.sh rewrites in place.
mkdir -p "$src/.tools/images/cache"
for entry in "$blocknode_cache"/images/base-*.tar "$blocknode_cache"/images/jre-*; do
    [[ -e $entry ]] || continue
    cp -al "$entry" "$src/.tools/images/cache/" 2>/dev/null || cp -a "$entry" "$src/.tools/images/cache/"
done
echo "kube: building the previous release (${commit:0:12}) as $version" >&2
bash "$src/deploy/release/release.sh" "$version" "$out/dist.tmp" >&2
mv "$out/dist.tmp" "$dist"
echo "kube: previous release ${commit:0:12} built in $((SECONDS - t0)) s" >&2
echo "$dist"
