#!/usr/bin/env bash
# Tears down a kube tier cluster left running by KUBE_KEEP=1 (or by a run that was killed): pods and volumes
# first while kubelet and blocknode can still release them, then every component, mount and loop device.
#
# usage: test-e2e/kube/down.sh WORK        (the /tmp/bnkube.* directory the run printed)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
WORK=$(realpath "${1:?usage: down.sh WORK}")
[[ $WORK == /tmp/bnkube* && -d $WORK/run ]] || { echo "kube: $WORK is not a kube tier work directory" >&2; exit 1; }
KUBE_T0=$(date +%s)
NODE_NAME=blocknode-kube
DRIVER=block.csi.blocknode.dev
KUBE_BIN=$(cat "$WORK/kube-bin")
RUNTIME_BIN=$(cat "$WORK/runtime-bin")
export PATH=$RUNTIME_BIN:$PATH
source "$here/lib.sh"
NODE_IP=$(node_ip)
source "$here/cluster.sh"
source "$here/deploy.sh"
source "$here/volumes.sh"
( teardown_volumes_and_plugin )
( cluster_down )
( release_loop_devices )
if ( check_nothing_left ); then rm -rf --one-file-system "$WORK"; echo "kube: $WORK torn down" >&2
else echo "kube: $WORK: something is left (see above)" >&2; exit 1; fi
