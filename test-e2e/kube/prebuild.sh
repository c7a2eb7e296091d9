#!/usr/bin/env bash
# Builds, ahead of the kube tier, what it builds first: the Kubernetes binaries, node B's older kubelet and the
# container runtime from the Go module proxy (build-kubernetes.sh, build-runtime.sh), and the previous release the
# upgrade scenario starts from (build-previous.sh: a Maven build and an image build of a pinned earlier commit, about
# 4 min cold). make test starts it in the background, at nice 10, right after its packages are installed, so that a
# cold build (30 min and more beside the VM tier's guests on 2 cores, 7-10 min alone, and 3-4 min more for the older
# kubelet) overlaps the Maven build and the short tiers instead of starting with the kube tier. The kube tier calls
# the same three scripts: each takes a lock on its output, so the tier waits for a build still running and then
# reuses it; all are kept in the machine-wide cache (scripts/cache.sh), so a new clone reuses them. Its output goes
# to .tools/prebuild.log.
#
# usage: test-e2e/kube/prebuild.sh   (make test runs it; a failure here is the kube tier's to report, when it builds
#                                     again)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
t0=$SECONDS
repo=$(cd "$here/../.." && pwd)
source "$here/lib.sh"
# make test starts this script in a session of its own (setsid, to stop it as a group): nice 10 against the guests too.
eval "$AUTOGROUP_KEEPS_NICE"
bash "$here/deps.sh" && bash "$here/build-kubernetes.sh" >/dev/null &&
    bash "$here/build-kubernetes.sh" "$(node_b_version)" kubelet >/dev/null && bash "$here/build-runtime.sh" >/dev/null &&
    bash "$here/build-previous.sh" >/dev/null
rc=$?
echo "kube prebuild: $( ((rc == 0)) && echo done || echo "FAILED (exit $rc; the kube tier builds again)") in $((SECONDS - t0)) s"
exit $rc
