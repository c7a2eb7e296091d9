# shellcheck shell=bash
# Sourced by the host-side scripts of the VM tier: where things are, which kernel the guest boots.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$VM_DIR/../.." && pwd)
# Build output and caches: under test-e2e/target like the rest of the module's output, so `mvn clean`
# (or deleting it) resets the tier. Override with VM_WORK.
VM_WORK=${VM_WORK:-$REPO_ROOT/test-e2e/target/vm}
# The Debian kernels fetch-kernel.sh unpacks depend on nothing in the checkout: they are kept machine-wide
# (scripts/cache.sh), so a new clone (CI's) boots the one already there. Override with VM_KERNELS.
source "$REPO_ROOT/scripts/cache.sh"
VM_KERNELS=${VM_KERNELS:-$blocknode_cache/kernels}

# The guest kernel: $VM_KERNEL if set, otherwise the newest /boot/vmlinuz-* whose modules are
# installed (a kernel left in /boot without /lib/modules could not load iSCSI or dm modules).
# VM_KERNEL_ROOT instead names a kernel package unpacked by fetch-kernel.sh (not installed on the host): the
# guest boots its image and loads its modules (VM_KERNEL, if set too, must be its version).
vm_kernel_version() {
  if [[ -n ${VM_KERNEL:-} ]]; then
    echo "$VM_KERNEL"; return
  fi
  if [[ -n ${VM_KERNEL_ROOT:-} ]]; then
    local dirs=("$VM_KERNEL_ROOT"/lib/modules/*/modules.dep)
    [[ ${#dirs[@]} -eq 1 && -f ${dirs[0]} ]] \
      || { echo "VM_KERNEL_ROOT=$VM_KERNEL_ROOT holds no one kernel's modules (run test-e2e/vm/fetch-kernel.sh)" >&2; return 1; }
    basename "$(dirname "${dirs[0]}")"; return
  fi
  local image version best=""
  for image in /boot/vmlinuz-*; do
    [[ -e $image ]] || continue
    version=${image#/boot/vmlinuz-}
    [[ -f /lib/modules/$version/modules.dep ]] && best+="$version"$'\n'
  done
  best=$(sort -V <<<"$best" | tail -n 1)
  if [[ -z $best ]]; then
    echo "no guest kernel: no /boot/vmlinuz-* with modules in /lib/modules (run test-e2e/vm/setup.sh)" >&2
    return 1
  fi
  echo "$best"
}

# The image of kernel $1: the host's /boot/vmlinuz-$1, or the unpacked package's under VM_KERNEL_ROOT.
vm_kernel_image() {
  if [[ -n ${VM_KERNEL_ROOT:-} ]]; then
    local image
    for image in "$VM_KERNEL_ROOT/lib/modules/$1/vmlinuz" "$VM_KERNEL_ROOT/boot/vmlinuz-$1"; do
      [[ -f $image ]] && { echo "$image"; return; }
    done
    echo "no kernel image for $1 under VM_KERNEL_ROOT=$VM_KERNEL_ROOT" >&2; return 1
  fi
  echo "/boot/vmlinuz-$1"
}

# Milliseconds since the epoch, for step timings.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
