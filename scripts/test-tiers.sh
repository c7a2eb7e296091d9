#!/usr/bin/env bash
# make test's tiers after its Maven build of the jars: the targets scripts/tiers.tsv marks "yes", in its order, each by
# its make target; the first failure stops the run. Tiers marked "beside" run at the same time as the last "yes" tier
# listed before them (their leader), one after another in their order: the short host tiers, the release and the kube
# tier beside the VM tier. The tiers marked "maven" (unit and host) run first beside the first leader, together in one
# Maven test run (make maven-test: one Surefire start per module for both), so that the VM tier's guests start as soon
# as the jars are built instead of after every unit and host test. The VM tier is the run's longest by far and leaves
# part of the machine idle: its guests run under TCG and wait on the SAN's timeouts (a boot keeps 1.3-1.6 of the 2
# cores busy), so the tiers beside it cost the run about the CPU they take instead of their whole wall time
# (docs/design/testing.md, "Order"). They share nothing with the guests (the guests run their own kernels on a
# snapshot of the jars; the host tiers' mounts and loop devices are the host's), and on a fresh machine the Kubernetes
# and runtime builds overlap the guests too. The beside tiers run at nice 10: a guest's vCPU preempted costs its whole
# guest (its sibling vCPU waits), while what runs beside it mostly waits on its own loops.
# A group runs until its leader ends, or one of its beside tiers fails: then the leader is stopped (its process group
# sent SIGTERM: the VM tier stops its guests), so that a failed unit test ends the run in minutes, not after every
# guest. Each tier's lines are prefixed with its name. The run fails if any of them failed.
#
# usage: scripts/test-tiers.sh [TIERS_FILE]   (make test calls it; MAKE names the make to call, default make)
set -uo pipefail
tiers=${1:-$(dirname "${BASH_SOURCE[0]}")/tiers.tsv}
make_cmd=${MAKE:-make}

# groups: one line per step of the run, the leader first and then its beside tiers, "name:target" each.
groups=()
maven=() # the tiers of the Maven test run, by name
while IFS=$'\t' read -r name target _root _time in_test _proves; do
    [[ -z $name || $name == \#* ]] && continue
    case $in_test in
        maven) maven+=("$name") ;;
        yes) groups+=("$name:$target") ;;
        beside)
            ((${#groups[@]})) || { echo "test-tiers: $name runs beside no tier (it comes first in $tiers)" >&2; exit 2; }
            groups[-1]+=" $name:$target" ;;
    esac
done < "$tiers"
((${#groups[@]})) || { echo "test-tiers: no tiers read from $tiers" >&2; exit 2; }
# The Maven tiers, as one tier named after them all (unit+host), first beside the first leader.
if ((${#maven[@]})); then
    read -r -a first <<< "${groups[0]}"
    groups[0]="${first[0]} $(IFS=+; echo "${maven[*]}"):maven-test ${first[*]:1}"
fi

# run_tier DIR NAME:TARGET [NICE...]: the tier's target, its lines prefixed with its name, its status to DIR/NAME.rc.
run_tier() {
    local dir=$1 tier=$2 name=${2%%:*}
    shift 2
    { "$@" "$make_cmd" --no-print-directory "${tier#*:}" 2>&1; echo $? > "$dir/$name.rc"; } | sed -u "s/^/$name | /"
}

# together LEADER BESIDE...: the leader at the run's priority, in a process group of its own; the beside tiers one
# after another at nice 10, at the same time, until one fails, and then the leader is stopped; waits for both.
together() {
    local t0=$SECONDS dir tier name status rc=0 leader names=()
    dir=$(mktemp -d /tmp/bn-tiers.XXXXXX)
    for tier in "$@"; do names+=("${tier%%:*}"); done
    set -m # the next background job leads a process group: the whole leader (make, its tier's scripts) can be stopped
    run_tier "$dir" "$1" &
    leader=$!
    set +m
    shift
    (
        for tier in "$@"; do
            run_tier "$dir" "$tier" nice -n 10
            [[ $(cat "$dir/${tier%%:*}.rc" 2>/dev/null) == 0 ]] || exit 1
        done
    ) &
    if ! wait $!; then
        echo "make test: a tier beside the ${names[0]} tier failed: stopping the ${names[0]} tier"
        kill -TERM -- "-$leader" 2>/dev/null
    fi
    wait "$leader"
    for name in "${names[@]}"; do
        if [[ -e $dir/$name.rc ]]; then
            status=$(cat "$dir/$name.rc")
            [[ $status == 0 ]] || rc=1
            echo "make test: the $name tier $([[ $status == 0 ]] && echo passed || echo "FAILED (exit $status)")"
        else
            rc=1
            echo "make test: the $name tier did not run to its end (a tier beside the ${names[0]} tier failed)"
        fi
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
