#!/usr/bin/env bash
# Builds blocknode's image from deploy/Containerfile.source, the way a user without a Debian host builds it
# with Docker or Podman: the context is a copy of the checkout's files (git ls-files, nothing a build made),
# the jar, JNI library and Java runtime are built inside the image's Debian builder stage. Here buildah
# builds it (as make image does), and the Debian image both stages start from is a root filesystem this
# machine bootstraps with mmdebstrap (docker.io is not needed). Writes the image as an OCI archive,
# .tools/images/blocknode-source.tar, named localhost/blocknode/blocknode:VERSION, after checking that its
# Java runs; prints "ARCHIVE REF" on stdout, what it did to stderr. Root. `make image-from-source` runs it.
#
# usage: deploy/image/build-from-source.sh [--version VERSION] [--debian-image REF] [--suite SUITE]
#   --version VERSION   the jar's and the image's version (default: the pom's revision, e.g. 0.1.0-SNAPSHOT)
#   --debian-image REF  start both stages from this image (e.g. docker.io/library/debian:trixie-slim where
#                       docker.io is reachable) instead of bootstrapping one
#   --suite SUITE       the Debian suite to bootstrap (default trixie: the first with OpenJDK 25)
#   DEBIAN_MIRROR       the mirror to bootstrap from and the image's apt uses (default http://deb.debian.org)
#
# Cached machine-wide under images/ (scripts/cache.sh: ~/.cache/blocknode by default): the bootstrapped Debian
# root (debian-SUITE-HASH.tar, HASH covering the suite, its sources and the mmdebstrap options), and buildah's
# cache mounts (source-build/: apt's packages and lists, Maven's repository), so a warm build downloads nothing it
# has. buildah's storage is temporary, as for make image.
set -euo pipefail
what="image-from-source"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { fail "usage: deploy/image/build-from-source.sh [--version VERSION] [--debian-image REF] [--suite SUITE]"; }
version=""
debian_image=""
suite=trixie
while (($#)); do
    case $1 in
        --version) (($# >= 2)) || usage; version=$2; shift ;;
        --debian-image) (($# >= 2)) || usage; debian_image=$2; shift ;;
        --suite) (($# >= 2)) || usage; suite=$2; shift ;;
        *) usage ;;
    esac
    shift
done
[[ $suite =~ ^[a-z]+$ ]] || fail "not a Debian suite name: $suite"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org}
[[ $mirror =~ ^https?://[A-Za-z0-9.:/_-]+$ ]] || fail "DEBIAN_MIRROR is not an http(s) URL: $mirror"
if [[ -z $version ]]; then
    version=$(sed -n 's|^ *<revision>\([^<]*\)</revision>.*|\1|p' "$repo/pom.xml" | head -n1)
    [[ -n $version ]] || fail "no <revision> in $repo/pom.xml: give --version"
fi
[[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "not a valid image tag: $version"
ref=localhost/blocknode/blocknode:$version
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null) || fail "$repo is not a git checkout"
[[ -z $(git -C "$repo" status --porcelain --untracked-files=no) ]] || revision=$revision-dirty
created=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%dT%H:%M:%SZ)
# The source label only where the checkout's source has a public address, as make image does (lib.sh).
source_label=$(source_url)

require_root
take_lock
ensure_packages "${source_packages[@]}"

# The Debian image of both stages, made as debian:SUITE-slim is: minbase (Essential and Priority: required,
# with apt) without manuals, docs, translations and lint data (dpkg keeps them out of later installs too),
# from the official mirror and the suite's updates and security archives.
debian_root() {
    local sources options key out tmp
    sources=$(printf 'Types: deb\nURIs: %s/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: %s/debian-security\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$mirror" "$suite" "$suite" "$mirror" "$suite")
    # shellcheck disable=SC2016 # "$1" is for mmdebstrap to expand
    options=(--variant=minbase --skip=output/dev
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*'
        --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*'
        --dpkgopt='path-exclude=/usr/share/lintian/*' --dpkgopt='path-exclude=/usr/share/linda/*'
        --customize-hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf"; : >"$1/etc/hostname"; : >"$1/etc/resolv.conf"')
    key=$(printf '%s\n' "$suite" "$sources" "${options[@]}" | sha256sum | cut -c1-16)
    out=$cache/debian-$suite-$key.tar
    if [[ -s $out ]]; then
        log "Debian $suite root: $out (cached)"
        echo "$out"
        return
    fi
    log "bootstrapping Debian $suite (minbase) from $mirror"
    tmp=$(mktemp --suffix=.tar "$cache/debian-$suite-$key.XXXXXX")
    printf '%s\n' "$sources" >"$tmp.sources"
    if ! mmdebstrap "${options[@]}" "$suite" "$tmp" "$tmp.sources" 2>"$tmp.log"; then
        cat "$tmp.log" >&2
        rm -f "$tmp" "$tmp.sources" "$tmp.log"
        fail "mmdebstrap of $suite failed"
    fi
    rm -f "$tmp.sources" "$tmp.log"
    mv "$tmp" "$out"
    log "Debian $suite root: $out ($(du -m "$out" | cut -f1) MiB) in $(elapsed)"
    for old in "$cache"/debian-"$suite"-*.tar; do
        [[ $old == "$out" ]] || rm -f "$old"
    done
    echo "$out"
}

# The context: the checkout's tracked files as they are in the working tree (a deleted one left out), so
# nothing a host build made (target/, .tools/) can reach the image.
context=$images/source-context
rm -rf "$context"
mkdir -p "$context"
git -C "$repo" ls-files -z --cached |
    (cd "$repo" && while IFS= read -r -d '' file; do [[ -e $file || -L $file ]] && printf '%s\0' "$file"; done) |
    tar -C "$repo" --null -T - -cf - | tar -C "$context" -xf -
log "build context: $context ($(du -sm "$context" | cut -f1) MiB, $(git -C "$repo" ls-files | wc -l) files)"

buildah_storage
if [[ -z $debian_image ]]; then
    root_tar=$(debian_root)
    debian_image=localhost/debian:$suite-slim
    container=$(bah from scratch)
    bah add "$container" "$root_tar" / >/dev/null
    bah commit --quiet "$container" "$debian_image" >/dev/null
    bah rm "$container" >/dev/null
fi

# The certificates this machine trusts beyond Debian's (update-ca-certificates' local directory), for the
# builder stage's Maven: a machine behind a proxy that intercepts TLS trusts the proxy's CA there.
extra_ca=""
for crt in /usr/local/share/ca-certificates/*.crt; do
    [[ -f $crt ]] && extra_ca+=$(cat "$crt")$'\n'
done
[[ -z $extra_ca ]] || log "the builder stage trusts this machine's local CA certificates: $(cd /usr/local/share/ca-certificates && echo *.crt)"

# buildah keeps RUN --mount=type=cache directories under TMPDIR (buildah-cache-UID): a directory of the cache,
# not the temporary storage, so they outlive this build.
build_cache=$cache/source-build
mkdir -p "$build_cache"
# What a build that was killed left of its temporary directories (this script holds the checkout's lock).
rm -rf "$build_cache"/buildah[0-9]*
build_log=$images/blocknode-source.build.log
log "buildah build of $ref from $debian_image (log: $build_log)"
started=$SECONDS
if ! TMPDIR=$build_cache bah build --isolation chroot --layers=false --pull=false \
        --ignorefile "$context/deploy/Containerfile.source.dockerignore" \
        --build-arg "DEBIAN_IMAGE=$debian_image" --build-arg "VERSION=$version" \
        --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
        --build-arg "EXTRA_CA_CERTIFICATES=$extra_ca" \
        ${source_label:+--label "org.opencontainers.image.source=$source_label"} \
        -f "$context/deploy/Containerfile.source" -t "$ref" "$context" >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    fail "buildah build failed (whole log: $build_log)"
fi
log "built in $((SECONDS - started)) s"

# The image's own Java starts, and its jar is the version asked for (the AOT training run in the build
# already ran the plugin against the image's host tools).
container=$(bah from --pull=never "$ref")
# (its first line taken after it ends: head would close the pipe on a java still writing, SIGPIPE under pipefail)
java_version=$(bah run --isolation chroot "$container" -- java -version 2>&1)
java_version=${java_version%%$'\n'*}
[[ $java_version == *'"25'* ]] || fail "the image's java -version says: $java_version"
jar_version=$(unzip -p "$(bah mount "$container")/app/blocknode.jar" META-INF/MANIFEST.MF |
    sed -n 's/^Implementation-Version: *\([^[:space:]]*\).*/\1/p')
bah umount "$container" >/dev/null
bah rm "$container" >/dev/null
[[ $jar_version == "$version" ]] || fail "the image's jar says version '$jar_version', not $version"
log "image's runtime: $java_version; jar $jar_version"
push_archive "$ref" "$ref" blocknode-source
rm -rf "$context"
log "done in $(elapsed)"
