#!/usr/bin/env bash
# Installs the Debian packages the VM tier needs, and only those that are missing.
#
# The packages serve two sides at once: qemu and kmod/cpio/busybox build and boot the guest, and the
# rest (kernel, open-iscsi, multipath-tools, tgt, udev, mkfs tools) are what the guest runs, because
# the guest's root filesystem IS this host's / (shared read-only over 9p). Installing the storage
# daemons here must not change how this host behaves, so their maintainer scripts are forbidden to
# start services (scripts/apt.sh's policy-rc.d), and afterwards we check that none of them is running.
#
# usage: test-e2e/vm/setup.sh        (as root; prints what it did)
set -euo pipefail

PACKAGES=(
  qemu-system-x86    # the emulator (TCG: KVM hangs on this machine's nested setup)
  linux-image-amd64  # a stock kernel with SCSI, iSCSI and device-mapper, plus its modules
  busybox-static     # the initramfs userland (static: no libraries to copy)
  kmod               # modprobe/modinfo to resolve module dependencies; modprobe in the guest; depmod for fetch-kernel.sh
  debian-archive-keyring  # the keys fetch-kernel.sh checks Debian 13's lists with (dpkg-deb, which unpacks, is dpkg's: essential)
  cpio               # to pack the initramfs
  open-iscsi         # iscsid + iscsiadm (the initiator the plugin will drive)
  multipath-tools    # multipathd + multipath (pulls in udev and kpartx)
  udev               # systemd-udevd in the guest: /dev/disk links, multipathd's uevents
  tgt                # tgtd: the iSCSI target that stands in for the storage array
  xfsprogs e2fsprogs # filesystems the plugin creates
  cryptsetup-bin     # cryptsetup: LUKS2 volumes (dm-crypt is the guest kernel's; this host has no device-mapper)
  iproute2           # `ip link set lo up` in the guest (the portals are loopback addresses)
  sg3-utils          # sg_persist: the fencing scenario reads the LUN's reservation from outside the plugin
  # The selinux scenario loads Debian's reference policy in the guest (its kernel boots with
  # security=selinux). On this host they are inert: selinux-policy-default's postinst builds the policy
  # with `semodule -n` (no load) unless SELinux runs, policycoreutils' only writes /etc/selinux/config
  # (SELINUX=permissive) when there is none and registers an init script that relabels only on a host
  # running SELinux; neither touches the boot loader (that is selinux-basics, not installed).
  selinux-policy-default  # the reference policy, with MCS levels (no container module: guest/selinux.sh)
  selinux-utils           # getenforce, in the guest
  policycoreutils         # load_policy, in the guest
)
# Daemons these packages ship; none may be left running on the host.
DAEMONS=(iscsid tgtd multipathd systemd-udevd udevd)

# pgrep matches one name (of at most 15 characters) at a time, so ask for each daemon in turn.
daemon_pids() { local name; for name in "${DAEMONS[@]}"; do pgrep -x "$name" || true; done; }

[[ $(id -u) -eq 0 ]] || { echo "setup.sh: must run as root (apt-get install)" >&2; exit 1; }

started=$(date +%s%N)
missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "vm setup: all ${#PACKAGES[@]} packages already installed, nothing to do"
else
  echo "vm setup: installing ${missing[*]}"

  before=$(daemon_pids)
  # scripts/apt.sh: waits for a dpkg lock another apt holds; updates the lists when a package has no candidate in
  # them, or when the install fails (stale lists naming files the mirror no longer has), at most once; blocks
  # services for the install (policy-rc.d); INITRD=No, so the kernel's postinst builds no Debian initramfs (the
  # guest boots our own).
  bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt.sh" install "${missing[@]}" ||
    { echo "vm setup: apt-get install failed (see above)" >&2; exit 1; }

  # Anything the maintainer scripts started despite the policy is ours to stop.
  after=$(daemon_pids)
  for pid in $after; do
    if ! grep -qx "$pid" <<<"$before"; then
      echo "vm setup: stopping $(cat /proc/"$pid"/comm 2>/dev/null) (pid $pid), started by a package script"
      kill "$pid" 2>/dev/null || true
    fi
  done
fi

# Checks that hold whether or not we installed anything.
kernels=(/boot/vmlinuz-*)
[[ -e ${kernels[0]} ]] || { echo "vm setup: no /boot/vmlinuz-* after install" >&2; exit 1; }
running=$(for pid in $(daemon_pids); do echo "$pid $(cat /proc/"$pid"/comm 2>/dev/null)"; done)
if [[ -n $running ]]; then
  echo "vm setup: WARNING: storage daemons are running on the host (not started by this script):" >&2
  echo "$running" >&2
fi
echo "vm setup: guest kernel(s): ${kernels[*]##*/vmlinuz-}; took $(( ($(date +%s%N) - started) / 1000000 )) ms"
