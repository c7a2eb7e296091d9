#!/usr/bin/env bash
# The Debian packages every image and release script installs when missing (lib.sh's lists: mmdebstrap, buildah,
# unzip, gcc and libc6-dev, xz-utils, containerd, runc, curl, skopeo, docker-registry, iproute2), all at once. make
# test-deps runs it before make test's first tier, so that the release and kube tiers find them and no tier installs
# anything midway.
# Root.
#
# usage: deploy/image/deps.sh
set -euo pipefail
what="image deps"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
ensure_packages "${base_packages[@]}" "${context_packages[@]}" "${build_packages[@]}" "${source_packages[@]}" \
    "${test_image_packages[@]}" "${check_packages[@]}" "${publish_packages[@]}" "${publish_check_packages[@]}"
