#!/bin/bash
# Runs several scenarios in one boot (e2e.sh's "NAME:A+B+C" runs): the SAN is started once, then each
# guest/<scenario>.sh runs in turn with its own results directory /results/<scenario>/ (console.log,
# plugin.log, client.log, commands.log, exit-status, seconds). A scenario that fails has its leftovers
# taken down (sessions, disks, maps, targets) so that the next one starts from a clean node.
#
#   GUEST_SUITE="iscsi-fs iscsi-chap" run-guest.sh guest/suite.sh RESULTS     (or the names as arguments)
#
# Exit status: the number of scenarios that failed (at most 126). GUEST_SCENARIO_TIMEOUT (s, default
# 420) bounds each scenario, so that one that hangs cannot take the others' time.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/lib.sh"

read -r -a scenarios <<<"${GUEST_SUITE:-$*}"
((${#scenarios[@]})) || { echo "suite: no scenarios (GUEST_SUITE or arguments)"; exit 2; }
limit=${GUEST_SCENARIO_TIMEOUT:-420}
started=$(vm_now_ms)
vm_log "suite: ${scenarios[*]}; kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB"

delete_targets() {
  local tid
  for tid in $(tgtadm --lld iscsi --mode target --op show 2>/dev/null | sed -n 's/^Target \([0-9]*\):.*/\1/p'); do
    tgtadm --lld iscsi --mode target --op delete --force --tid "$tid" >/dev/null 2>&1
  done
}
san_alive() { { pidof tgtd && pidof iscsid && pidof multipathd && pidof systemd-udevd; } >/dev/null; }

if ! vm_step san-start vm_san_start; then
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
  # Each line goes to the console and to the scenario's own log.
  VM_RESULTS=$dir BN_SCENARIO=$s timeout -k 10 "$limit" bash "$HERE/$s.sh" 2>&1 | tee "$dir/console.log"
  rc=${PIPESTATUS[0]}
  ((rc == 124)) && echo "suite: $s did not finish within $limit s"
  ms=$(( $(vm_now_ms) - t0 ))
  echo "$rc" > "$dir/exit-status"
  echo $((ms / 1000)) > "$dir/seconds"
  if ((rc == 0)) && grep -q '^XFAIL-SCENARIO' "$dir/xfail" 2>/dev/null; then
    summary+=("XFAIL $s $ms ms ($(sed -n 's/^XFAIL-SCENARIO //p' "$dir/xfail" | head -n 1 | cut -c1-100))")
  elif ((rc == 0)); then
    summary+=("PASS $s $ms ms")
  else
    failed=$((failed + 1)); summary+=("FAIL $s $ms ms (exit $rc)")
    vm_initiator_teardown
  fi
  delete_targets
  # Whatever a scenario did, the next one needs the daemons.
  if ! san_alive; then
    echo "suite: a SAN daemon died during $s; restarting the SAN"
    vm_san_stop >/dev/null 2>&1
    vm_step san-restart vm_san_start || { failed=$((failed + 1)); break; }
  fi
done

delete_targets
vm_step san-stop vm_san_stop || failed=$((failed + 1))
echo "===== suite summary"
printf '%s\n' "${summary[@]}"
echo "suite: $((${#scenarios[@]} - failed)) of ${#scenarios[@]} passed in $(( $(vm_now_ms) - started )) ms"
exit $((failed > 126 ? 126 : failed))
