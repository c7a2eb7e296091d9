#!/bin/bash
# Runs several scenarios in one boot (e2e.sh's "NAME:A+B+C" runs): the SAN is started once, then each
# guest/<scenario>.sh runs in turn with its own results directory /results/<scenario>/ (console.log,
# plugin.log, client.log, commands.log, exit-status, seconds). A scenario that fails has its leftovers
# taken down (sessions, disks, maps, targets) so that the next one starts from a clean node.
#
#   GUEST_SUITE="iscsi-fs iscsi-chap" run-guest.sh guest/suite.sh RESULTS     (or the names as arguments)
#
# Exit status: the number of scenarios that failed (at most 126). Each scenario has a time limit, so that
# one that hangs cannot take the others' time: GUEST_SCENARIO_TIMEOUT (s) if set, else the "# vm-limit: S"
# line of the scenario's header (those that ran a boot of their own before: csi-sanity's runs, the fc
# scenario's loaded times), else 600; times GUEST_LANES, the guests e2e.sh runs at once. (600, not the 420 it was:
# on a fresh 2-core machine, with the Maven run and the kube tier's first build of Kubernetes beside the first boots,
# iscsi-luks ran past 420 s and iscsi-path-loss took 362 s.)
#
# The SAN: the iSCSI daemons (udevd, tgtd, iscsid, multipathd) are started once for the suite, and a
# scenario that fails has its leftovers taken down before the next one. A scenario whose header says
# "# vm-san: own" (nvme-tcp, fc and their csi-sanity runs) starts and stops its own daemons and array and
# takes them down on its own failure path; a suite of those starts nothing (fc's udevd and multipathd would
# clash with the suite's), and a suite cannot mix the two kinds. A scenario of either kind ends with the node
# clean (its bn_end / nvme_end / fc_end check), which is what lets the next one run in the same boot.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/lib.sh"

read -r -a scenarios <<<"${GUEST_SUITE:-$*}"
((${#scenarios[@]})) || { echo "suite: no scenarios (GUEST_SUITE or arguments)"; exit 2; }
started=$(vm_now_ms)
vm_log "suite: ${scenarios[*]}; kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB"

# header SCENARIO KEY: the first word after "# KEY: " in the scenario's header (the rest of the line says why).
header() { sed -n "s/^# $2: *\([^ ]*\).*/\1/p" "$HERE/$1.sh" | head -n 1; }
# The limit is for a guest alone on the machine: with GUEST_LANES guests at once (e2e.sh's VM_LANES) each gets about
# 1/GUEST_LANES of the host, and its scenarios that much longer.
scenario_limit() {
  local own; own=$(header "$1" vm-limit)
  echo "$(( ${GUEST_SCENARIO_TIMEOUT:-${own:-600}} * ${GUEST_LANES:-1} ))"
}
own_san=0
for s in "${scenarios[@]}"; do [[ $(header "$s" vm-san) == own ]] && own_san=$((own_san + 1)); done
if ((own_san == 0)); then
  shared_san=yes
elif ((own_san == ${#scenarios[@]})); then
  shared_san=no
else
  echo "suite: ${scenarios[*]} mixes scenarios that start their own daemons (# vm-san: own) with ones that use the suite's SAN"
  for s in "${scenarios[@]}"; do mkdir -p "/results/$s"; echo 2 > "/results/$s/exit-status"; done
  exit 2
fi

delete_targets() {
  local tid
  for tid in $(tgtadm --lld iscsi --mode target --op show 2>/dev/null | sed -n 's/^Target \([0-9]*\):.*/\1/p'); do
    tgtadm --lld iscsi --mode target --op delete --force --tid "$tid" >/dev/null 2>&1
  done
}
san_alive() { { pidof tgtd && pidof iscsid && pidof multipathd && pidof systemd-udevd; } >/dev/null; }

if [[ $shared_san == yes ]] && ! vm_step san-start vm_san_start; then
  vm_diagnose
  for s in "${scenarios[@]}"; do mkdir -p "/results/$s"; echo 125 > "/results/$s/exit-status"; done
  exit 126
fi

failed=0; summary=()
for s in "${scenarios[@]}"; do
  dir=/results/$s
  mkdir -p "$dir"
  t0=$(vm_now_ms)
  echo "===== $s"
  rc=0
  limit=$(scenario_limit "$s")
  # Each line goes to the console and to the scenario's own log.
  VM_RESULTS=$dir BN_SCENARIO=$s timeout -k 10 "$limit" bash "$HERE/$s.sh" 2>&1 | tee "$dir/console.log"
  rc=${PIPESTATUS[0]}
  ((rc == 124)) && echo "suite: $s did not finish within $limit s" | tee -a "$dir/console.log"
  ms=$(( $(vm_now_ms) - t0 ))
  echo "$rc" > "$dir/exit-status"
  echo $((ms / 1000)) > "$dir/seconds"
  if ((rc == 0)) && grep -q '^XFAIL-SCENARIO' "$dir/xfail" 2>/dev/null; then
    summary+=("XFAIL $s $ms ms ($(sed -n 's/^XFAIL-SCENARIO //p' "$dir/xfail" | head -n 1 | cut -c1-100))")
  elif ((rc == 0)); then
    summary+=("PASS $s $ms ms")
  else
    failed=$((failed + 1)); summary+=("FAIL $s $ms ms (exit $rc)")
    [[ $shared_san == yes ]] && vm_initiator_teardown
  fi
  [[ $shared_san == yes ]] || continue
  delete_targets
  # Whatever a scenario did, the next one needs the daemons.
  if ! san_alive; then
    echo "suite: a SAN daemon died during $s; restarting the SAN"
    vm_san_stop >/dev/null 2>&1
    vm_step san-restart vm_san_start || { failed=$((failed + 1)); break; }
  fi
done

if [[ $shared_san == yes ]]; then
  delete_targets
  vm_step san-stop vm_san_stop || failed=$((failed + 1))
fi
echo "===== suite summary"
printf '%s\n' "${summary[@]}"
echo "suite: $((${#scenarios[@]} - failed)) of ${#scenarios[@]} passed in $(( $(vm_now_ms) - started )) ms"
exit $((failed > 126 ? 126 : failed))
