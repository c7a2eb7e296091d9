#!/usr/bin/env bash
# make test's proof of the any-host route to an image (make image-from-source-check): deploy/Containerfile.source
# built as a Docker or Podman user builds it (build-from-source.sh: buildah here, from a bootstrapped Debian root,
# the jar, JNI library and Java runtime made inside the builder stage from the checkout's tracked files), then run
# as the operator's command line exactly as the release's image is (release/cli-check.sh: --version, doctor,
# status and pv as docs/reference/cli.md shows them). Fails when the build fails, when the image's Java or jar
# version is not the one asked for (build-from-source.sh checks both), or when the command line does not serve.
#
# The image is built at 0.0.0-source, not the development version, so that a version the build does not pass
# through shows. Its archive is removed at the end; the machine-wide caches stay (scripts/cache.sh: the Debian
# root, apt's packages and Maven's repository of the builder stage), so a second run downloads nothing it has.
# Needs deb.debian.org and Maven Central (DEBIAN_MIRROR for another mirror). Root; minutes.
#
# usage: deploy/image/source-check.sh
set -euo pipefail
what="image-from-source-check"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 0)) || fail "usage: deploy/image/source-check.sh"
require_root
version=0.0.0-source

built=$(bash "$repo/deploy/image/build-from-source.sh" --version "$version") ||
    fail "make image-from-source failed (its log: .tools/images/blocknode-source.build.log)"
read -r archive ref <<<"$built"
[[ -s $archive ]] || fail "build-from-source.sh named no archive: $built"
log "built $ref into $archive"
bash "$repo/deploy/release/cli-check.sh" "$archive" "$version" ||
    fail "the image built from deploy/Containerfile.source does not serve as the command line (kept: $archive)"
rm -f "$archive"
log "passed in $(elapsed)"
