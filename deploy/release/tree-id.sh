#!/usr/bin/env bash
# What make release builds from: every file of the working tree that is tracked, or untracked but not ignored.
#
#   deploy/release/tree-id.sh --files   those files' paths, NUL-terminated (release.sh copies them)
#   deploy/release/tree-id.sh           their identity: a sha256 over each one's path and content. release/check.sh
#                                       records it beside the release it checked, and the kube tier installs that
#                                       release only while the tree keeps this identity (test-e2e/kube/registry.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
files() {
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done
}
case ${1:-} in
    --files) files ;;
    "") files | xargs -0 -r sha256sum -- | sha256sum | cut -d' ' -f1 ;;
    *) echo "usage: deploy/release/tree-id.sh [--files]" >&2; exit 2 ;;
esac
