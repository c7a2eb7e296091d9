#!/usr/bin/env bash
# Boots the test guest, runs GUEST_SCRIPT in it, and exits with that script's exit status.
#
#   test-e2e/vm/run-guest.sh GUEST_SCRIPT [RESULTS_DIR]
#
# The guest's root is this host's / (read-only, with a tmpfs overlay), so GUEST_SCRIPT is given by its
# host path and sees the repository, the JDK and the built jars where they are here. RESULTS_DIR
# (default test-e2e/target/vm/results/<script name>) is shared writable and mounted at /results in
# the guest; the console log goes to RESULTS_DIR/console.log, each line stamped with the host time
# since qemu started.
#
# Exit status: the script's own (0-126), or 124 when the host's hard limit ended qemu, or 125 when
# the guest never reported one (qemu failed to start, kernel panic, init failure).
#
# One reboot: a scenario that must survive a power cut (iscsi-reboot) writes /results/reboot-requested and
# resets the guest at once (echo b > /proc/sysrq-trigger: no unmount, no sync, no shutdown). qemu runs with
# -no-reboot, so the reset ends it; this script then renames the marker to RESULTS_DIR/rebooted and boots the
# same script once more, which finds /results/rebooted and runs its second half. Only one: a marker written by
# the second boot is an error. VM_TIMEOUT covers both boots together.
#
# Environment: VM_TIMEOUT (host hard limit in s, default 900, for all boots of the run), VM_MEMORY (MiB, default 1024),
# VM_CPUS (default 2), VM_CPU_MODEL (qemu's -cpu, default TCG's max without AVX), VM_QUIET=1 (do not echo the
# console), VM_KERNEL (kernel version), VM_KERNEL_ROOT (a kernel unpacked by fetch-kernel.sh, booted instead of the
# host's), VM_APPEND (extra kernel command line), VM_INITRAMFS (an image build-initramfs.sh made).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ $# -ge 1 && $# -le 2 ]] || { sed -n '4p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 2; }
script=$(readlink -f "$1")
[[ -f $script ]] || { echo "run-guest: no such script: $1" >&2; exit 2; }
# The path travels on the kernel command line, where a blank would end it.
[[ $script != *[[:space:]]* ]] || { echo "run-guest: the script's path must not contain blanks: $script" >&2; exit 2; }
name=$(basename "$script"); name=${name%.sh}
results=${2:-$VM_WORK/results/$name}
mkdir -p "$results"
results=$(readlink -f "$results")
# Stale status or logs from an earlier run must not be read as this run's.
rm -f "$results/exit-status" "$results/console.log" "$results/dmesg.txt" "$results/reboot-requested" "$results/rebooted"
log=$results/console.log

# Environment for the guest script, sourced by the guest's init (POSIX sh, single-quoted values):
# where the repository and the build output are, which JDK, and every GUEST_* variable set here.
env_line() { printf "export %s='%s'\n" "$1" "${2//\'/\'\\\'\'}"; }
{
  env_line VM_REPO "$REPO_ROOT"
  env_line VM_WORK "$VM_WORK"
  [[ -n ${JAVA_HOME:-} ]] && env_line JAVA_HOME "$JAVA_HOME"
  while IFS='=' read -r var _; do env_line "$var" "${!var}"; done < <(env | grep -E '^GUEST_[A-Za-z0-9_]*=' || true)
} > "$results/guest.env"

host_limit=${VM_TIMEOUT:-900}
deadline=$((SECONDS + host_limit))
kernel=$(vm_kernel_version)
initramfs=${VM_INITRAMFS:-$("$VM_DIR/build-initramfs.sh" "$kernel")}
command -v qemu-system-x86_64 >/dev/null || { echo "run-guest: no qemu-system-x86_64 (run test-e2e/vm/setup.sh)" >&2; exit 125; }

work=$(mktemp -d /tmp/bn-vm.XXXXXX)
tag=bn-vm-$$
qemu_cmd=(
  qemu-system-x86_64 -name "$tag" -pidfile "$work/qemu.pid"
  # TCG only: with KVM the stock kernel hangs right after decompression on this machine.
  # Every CPU feature TCG has but AVX and what builds on it: TCG emulates AVX's wide registers at a high cost, and
  # glibc's string and memory functions pick their AVX2 versions when the CPU has it. Without it the daemons start
  # 2-3x faster (tgtd 2.6 -> 0.9 s, iscsid 1.1 -> 0.25 s) and the nvme boot takes 6% less time and CPU (README.md,
  # "The guest's CPU"). The guests' JVMs run with -XX:UseAVX=0 to match (guest/jvm.sh).
  -accel tcg,thread=multi,tb-size=256 -cpu "${VM_CPU_MODEL:-max,avx=off,avx2=off,f16c=off,fma=off,vaes=off,vpclmulqdq=off}"
  -smp "${VM_CPUS:-2}" -m "${VM_MEMORY:-1024}"
  # No default devices (VGA, NIC, monitor...): the console is the only serial port, on stdio, and the
  # guest has no network card at all, so nothing it does can leave the machine.
  -nodefaults -no-user-config -display none -serial stdio -nic none -no-reboot
  -kernel "$(vm_kernel_image "$kernel")" -initrd "$initramfs"
  # The host's / for the guest's root: read-only on qemu's side too, so not even a bug in the
  # guest's overlay setup could write to the host. multidevs=remap keeps inode numbers unique
  # although / spans several host filesystems.
  -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
  -fsdev "local,id=results,path=$results,security_model=none"
  -device virtio-9p-pci,fsdev=results,mount_tag=results
  # Port 0xf4: the guest's exit status (see initramfs/vm-init).
  -device isa-debug-exit,iobase=0xf4,iosize=0x04
  # bn_timeout= is appended per boot (boot_once): a second boot has what the first left of VM_TIMEOUT.
)
# clocksource=tsc tsc=reliable: the kernel finds TCG's vCPUs' TSCs out of sync at boot and falls back to the HPET,
# whose every read is an emulated MMIO access and a system call (no vDSO). qemu's TSC is one clock for every vCPU; on
# it the JVMs, Go and the daemons read the time in user space: 8% less time and CPU (README.md, "The guest's CPU").
append="console=ttyS0 quiet loglevel=3 panic=-1 clocksource=tsc tsc=reliable bn_script=$script ${VM_APPEND:-}"
# A kernel unpacked under VM_KERNEL_ROOT has its modules there, not in the host's /lib/modules: the guest links them.
if [[ -n ${VM_KERNEL_ROOT:-} ]]; then
  modules_dir=$(readlink -f "$VM_KERNEL_ROOT/lib/modules/$kernel")
  [[ $modules_dir != *[[:space:]]* ]] || { echo "run-guest: VM_KERNEL_ROOT must not contain blanks" >&2; exit 2; }
  append+=" bn_modules=$modules_dir"
fi


timeout_pid=""
console_pid=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  # timeout forwards our TERM to qemu and, thanks to --kill-after, KILLs it if it lingers.
  if [[ -n $timeout_pid ]] && kill -0 "$timeout_pid" 2>/dev/null; then
    echo "run-guest: stopping qemu" >&2
    kill -TERM "$timeout_pid" 2>/dev/null || true
    wait "$timeout_pid" 2>/dev/null || true
  fi
  # Belt and braces: the pid file names qemu itself; only a process that still carries our tag is ours.
  local qemu_pid
  qemu_pid=$(cat "$work/qemu.pid" 2>/dev/null || true)
  if [[ -n $qemu_pid ]] && tr '\0' ' ' < "/proc/$qemu_pid/cmdline" 2>/dev/null | grep -q -- "-name $tag "; then
    kill -KILL "$qemu_pid" 2>/dev/null || true
  fi
  [[ -n $console_pid ]] && wait "$console_pid" 2>/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# boot_once: one boot of the guest, its console through a FIFO to a reader that stamps each line with the
# host time since the first boot started, writes it to the log and (unless VM_QUIET) echoes it. Sets
# qemu_status, or returns 1 when nothing of VM_TIMEOUT is left for it.
started=$EPOCHREALTIME
boot_once() {
  local limit=$((deadline - SECONDS)) guest_limit
  ((limit > 0)) || return 1
  # The guest gives up first (leaving time to save dmesg and report), the host only if that fails.
  guest_limit=$(( limit > 120 ? limit - 60 : limit / 2 ))
  rm -f "$work/console"
  mkfifo "$work/console"
  (
    while IFS= read -r line || [[ -n $line ]]; do
      line=${line%$'\r'}
      us=$(( ${EPOCHREALTIME/./} - ${started/./} ))
      printf -v stamped '[%4d.%02d] %s' $((us / 1000000)) $((us / 10000 % 100)) "$line"
      echo "$stamped" >> "$log"
      [[ ${VM_QUIET:-0} == 1 ]] || echo "$stamped"
    done < "$work/console"
  ) &
  console_pid=$!
  timeout --kill-after=10 "$limit" "${qemu_cmd[@]}" -append "$append bn_timeout=$guest_limit" \
    < /dev/null > "$work/console" 2>&1 &
  timeout_pid=$!
  qemu_status=0
  wait "$timeout_pid" || qemu_status=$?
  timeout_pid=""
  wait "$console_pid" || true
  console_pid=""
}

echo "run-guest: booting kernel $kernel for $script (limit ${host_limit} s, results in $results)"
qemu_status=124
boot_once || true
if [[ -e $results/reboot-requested ]] && (( qemu_status != 124 && qemu_status != 137 )); then
  first=$(( (${EPOCHREALTIME/./} - ${started/./}) / 100000 ))
  echo "run-guest: the guest asked for a reboot after $((first / 10)).$((first % 10)) s; booting it once more"
  mv "$results/reboot-requested" "$results/rebooted"
  echo "[run-guest] ----- reboot: second boot" >> "$log"
  qemu_status=124
  boot_once || true
  if [[ -e $results/reboot-requested ]]; then
    echo "run-guest: the second boot asked for another reboot; only one is made" >&2
    qemu_status=0
  fi
fi
us=$(( ${EPOCHREALTIME/./} - ${started/./} ))
elapsed=$((us / 1000000)).$((us / 100000 % 10))

# Decode: qemu exits (V << 1) | 1 when the guest writes V = status + 1 to port 0xf4.
status=125
if (( qemu_status == 124 || qemu_status == 137 )); then
  echo "run-guest: the guest did not finish within ${host_limit} s; qemu was stopped" >&2
  status=124
elif (( qemu_status >= 3 && qemu_status % 2 == 1 )); then
  status=$(( (qemu_status - 1) / 2 - 1 ))
  reported=$(cat "$results/exit-status" 2>/dev/null || echo none)
  if [[ $reported != none && $reported != "$status" && $status -lt 126 ]]; then
    echo "run-guest: exit statuses disagree: port says $status, results share says $reported" >&2
  fi
else
  echo "run-guest: the guest stopped without reporting a status (qemu exit $qemu_status); see $log" >&2
fi
echo "run-guest: $name exited $status after $elapsed s"
exit "$status"
