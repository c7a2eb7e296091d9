#!/usr/bin/env bash
# make test's tiers after its Maven build: the targets scripts/tiers.tsv marks "yes", in its order, each by its make
# target; the first failure stops the run. A tier marked "beside" runs at the same time as the tier listed before it:
# the kube tier beside the VM tier. They share nothing (the guests run their own kernels, the cluster runs on the
# host's), and the kube tier spends most of its time waiting on kubelet's and the controllers' loops, so beside the
# guest it costs the run about the CPU it uses instead of its whole wall time, and on a fresh machine its Kubernetes
# and runtime builds overlap the guests too (test-e2e/kube/README.md, Figures). The beside tier runs at nice 10: a
# guest's vCPU preempted costs its whole guest (its sibling vCPU waits), while the cluster's waits are seconds long.
# A pair always runs to its end, each tier's lines prefixed with its name; the run fails if either failed.
#
# usage: scripts/test-tiers.sh [TIERS_FILE]   (make test calls it; MAKE names the make to call, default make)
set -uo pipefail
tiers=${1:-$(dirname "${BASH_SOURCE[0]}")/tiers.tsv}
make_cmd=${MAKE:-make}

# groups: one line per step of the run, the tiers that run together, "name:target" each.
groups=()
while IFS=$'\t' read -r name target _root _time in_test _proves; do
    [[ -z $name || $name == \#* ]] && continue
    case $in_test in
        yes) groups+=("$name:$target") ;;
        beside)
            ((${#groups[@]})) || { echo "test-tiers: $name runs beside no tier (it comes first in $tiers)" >&2; exit 2; }
            groups[-1]+=" $name:$target" ;;
    esac
done < "$tiers"
((${#groups[@]})) || { echo "test-tiers: no tiers read from $tiers" >&2; exit 2; }

# together NAME:TARGET...: each target in the background, its lines prefixed with its name, the first at the run's
# priority and the others (the beside tiers) at nice 10; waits for all of them.
together() {
    local t0=$SECONDS dir tier name status rc=0 names=() nice=()
    dir=$(mktemp -d /tmp/bn-tiers.XXXXXX)
    for tier in "$@"; do
        name=${tier%%:*}
        names+=("$name")
        { "${nice[@]}" "$make_cmd" --no-print-directory "${tier#*:}" 2>&1; echo $? > "$dir/$name.rc"; } |
            sed -u "s/^/$name | /" &
        nice=(nice -n 10)
    done
    wait
    for name in "${names[@]}"; do
        status=$(cat "$dir/$name.rc" 2>/dev/null || echo "no status")
        [[ $status == 0 ]] || rc=1
        echo "make test: the $name tier $([[ $status == 0 ]] && echo passed || echo "FAILED (exit $status)")"
    done
    rm -rf "$dir"
    echo "make test: the ${names[*]} tiers side by side took $((SECONDS - t0)) s"
    return $rc
}

for group in "${groups[@]}"; do
    read -r -a members <<< "$group"
    if ((${#members[@]} == 1)); then
        "$make_cmd" --no-print-directory "${members[0]#*:}" || exit
    else
        together "${members[@]}" || exit
    fi
done
