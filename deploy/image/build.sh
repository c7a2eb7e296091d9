#!/usr/bin/env bash
# Builds blocknode's container image offline from deploy/Containerfile with buildah, and writes it as an OCI
# archive: .tools/images/blocknode.tar, its one image named localhost/blocknode/blocknode:VERSION (VERSION:
# the jar's Implementation-Version, e.g. 0.1.0-SNAPSHOT). Prints "ARCHIVE REF" on stdout; what it did goes
# to stderr. Root (as make test). `make image` runs it after building the jar; `make release` too
# (deploy/release/release.sh), with --repository and --output.
#
# usage: deploy/image/build.sh [--context-only] [--refresh-base] [--tag TAG] [--repository REPO]
#                              [--output ARCHIVE] [PLUGIN_JAR]
#   --context-only  prepare the build context (.tools/images/context) and print its path, for
#                   `docker build -f deploy/Containerfile .tools/images/context` (or podman)
#   --refresh-base  bootstrap the Debian base again even if its recipe did not change (security updates)
#   --tag TAG       the image's tag instead of the jar's version
#   --repository REPO  the image's name without the tag (default localhost/blocknode/blocknode)
#   --output ARCHIVE   where the OCI archive goes (default .tools/images/blocknode.tar)
#   PLUGIN_JAR      default java/target/blocknode.jar
#
# The image carries the OCI annotation labels (org.opencontainers.image.*): version (the tag), revision (this
# checkout's git commit, "-dirty" appended when it has uncommitted changes), created (now, or
# SOURCE_DATE_EPOCH), source (BLOCKNODE_SOURCE_URL, else the git remote "origin" when it is an http(s) URL;
# otherwise no source label: lib.sh's source_url), licenses, title, description.
#
# The build context, as the Containerfile expects it:
#   base.tar        deploy/image/base.sh: Debian (this machine's release) + the plugin's host tools, mmdebstrap
#   jre/            deploy/image/jre.sh: jlink of the build JDK with the modules the plugin uses
#   blocknode.jar   the plugin jar
#   jvm.args, aot-training.sh   copied from deploy/
# buildah's storage is a temporary directory under .tools/images, removed at exit with every container and
# image in it: nothing accumulates between builds, and only the base and the runtime are cached.
set -euo pipefail
what="image"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { fail "usage: deploy/image/build.sh [--context-only] [--refresh-base] [--tag TAG] [--repository REPO] [--output ARCHIVE] [PLUGIN_JAR]"; }
context_only=false
base_args=()
tag=""
jar=""
repository=localhost/blocknode/blocknode
output=""
while (($#)); do
    case $1 in
        --context-only) context_only=true ;;
        --refresh-base) base_args=(--refresh) ;;
        --tag) (($# >= 2)) || usage; tag=$2; shift ;;
        --repository) (($# >= 2)) || usage; repository=$2; shift ;;
        --output) (($# >= 2)) || usage; output=$(realpath -m "$2"); shift ;;
        -*) usage ;;
        *) [[ -z $jar ]] || usage; jar=$1 ;;
    esac
    shift
done
jar=$(realpath -m "${jar:-$repo/java/target/blocknode.jar}")
[[ -f $jar ]] || fail "no plugin jar at $jar; build it first (make build)"
require_root
take_lock
ensure_packages "${context_packages[@]}"
$context_only || ensure_packages "${build_packages[@]}"

if [[ -z $tag ]]; then
    tag=$(unzip -p "$jar" META-INF/MANIFEST.MF | sed -n 's/^Implementation-Version: *\([^[:space:]]*\).*/\1/p')
    [[ -n $tag ]] || fail "$jar has no Implementation-Version in its manifest: give --tag"
fi
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "not a valid image tag: $tag"
[[ $repository =~ ^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+$ ]] ||
    fail "not a valid image repository (registry/name, lower case): $repository"
ref=$repository:$tag

revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null) || fail "$repo is not a git checkout: no revision for the image's label"
[[ -z $(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null) ]] || revision=$revision-dirty
created=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%dT%H:%M:%SZ)
source_label=$(source_url)
labels=(
    "org.opencontainers.image.title=blocknode"
    "org.opencontainers.image.description=Kubernetes CSI node plugin for Fibre Channel, iSCSI, NVMe/TCP and local block storage"
    "org.opencontainers.image.version=$tag"
    "org.opencontainers.image.revision=$revision"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.licenses=Apache-2.0"
)
# Only where the checkout's source has a public address (lib.sh's source_url).
[[ -z $source_label ]] || labels+=("org.opencontainers.image.source=$source_label")

base=$("$repo/deploy/image/base.sh" "${base_args[@]}")
jre=$("$repo/deploy/image/jre.sh" "$jar")

context=$images/context
rm -rf "$context"
mkdir -p "$context"
# Hard links where the cache and the context share a file system (they do, both under .tools/images).
cp -l "$base" "$context/base.tar" 2>/dev/null || cp "$base" "$context/base.tar"
cp -al "$jre" "$context/jre" 2>/dev/null || cp -a "$jre" "$context/jre"
cp "$jar" "$context/blocknode.jar"
cp "$repo/deploy/jvm.args" "$repo/deploy/aot-training.sh" "$context/"
# Every ADD and COPY source of the Containerfile must be in the context (and let in by its ignore file).
while read -r instruction sources; do
    read -r -a sources <<<"$sources"
    for src in "${sources[@]:0:${#sources[@]}-1}"; do
        [[ -e $context/$src ]] || fail "deploy/Containerfile ${instruction}s $src, which the context lacks"
        grep -qx "!$src" "$repo/deploy/Containerfile.dockerignore" ||
            fail "deploy/Containerfile.dockerignore keeps $src out of the context"
    done
done < <(grep -E '^(ADD|COPY) ' "$repo/deploy/Containerfile")
log "build context: $context ($(du -sm "$context" | cut -f1) MiB)"
if $context_only; then
    echo "$context"
    exit 0
fi

buildah_storage
log "buildah build of $ref (chroot isolation: the AOT training run executes in the image's root)"
started=$SECONDS
# Without --layers buildah runs every step in one working container and commits one layer: with vfs no
# per-step copies of the root filesystem.
build_log=$images/blocknode.build.log
label_args=()
for label in "${labels[@]}"; do label_args+=(--label "$label"); done
if ! bah build --isolation chroot --layers=false "${label_args[@]}" -f "$repo/deploy/Containerfile" -t "$ref" "$context" \
        >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    fail "buildah build failed (whole log: $build_log)"
fi
log "built in $((SECONDS - started)) s (log: $build_log)"
push_archive "$ref" "$ref" "${output:-blocknode}"
log "done in $(elapsed)"
