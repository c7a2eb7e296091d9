# shellcheck shell=bash
# Sourced by the scripts that build what does not depend on the checkout, each thing keyed by its recipe: the image's
# Debian base root and Java runtime, the source image's Debian root and its builder's package caches
# (deploy/image/), the previous release the kube tier's upgrade scenario starts from (test-e2e/kube/
# build-previous.sh), and the Debian kernels the VM tier fetches (test-e2e/vm/fetch-kernel.sh). They are kept
# machine-wide, as Maven's and Go's own caches are, so that a new clone (CI's, a second worktree) finds them instead
# of bootstrapping Debian roots, fetching kernels and building an earlier release again: a fresh machine builds each
# once. An entry is only ever written whole (a temporary name, then a rename) and read under its
# builder's lock.
#
# BLOCKNODE_CACHE: where (default: $XDG_CACHE_HOME/blocknode, else ~/.cache/blocknode). Removing it is always safe.
# shellcheck disable=SC2034 # read by the scripts that source this file
blocknode_cache=${BLOCKNODE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/blocknode}
