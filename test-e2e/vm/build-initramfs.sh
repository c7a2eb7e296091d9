#!/usr/bin/env bash
# Builds (or finds in the cache) the guest's initramfs and prints its path on stdout.
#
# The initramfs holds only busybox, the kernel modules needed to reach the root filesystem (virtio
# PCI, 9p over virtio, overlayfs) and the two init stages (initramfs/init, initramfs/vm-init).
# Everything else the guest runs comes from the host's / over 9p, so this archive is about 1.5 MB
# and only changes when the kernel, busybox or the init scripts do. Those are exactly what the cache
# key covers: $VM_WORK/initramfs/<kernel version>-<hash of the inputs>/initramfs.cpio.gz.
#
# usage: test-e2e/vm/build-initramfs.sh [KERNEL_VERSION]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kernel=${1:-$(vm_kernel_version)}
busybox=/bin/busybox
# Static, because the initramfs has no libraries (ldd fails on a static binary).
if [[ ! -x $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
  echo "build-initramfs: need a static $busybox (busybox-static; run test-e2e/vm/setup.sh)" >&2; exit 1
fi
command -v modprobe >/dev/null && command -v cpio >/dev/null \
  || { echo "build-initramfs: need modprobe (kmod) and cpio; run test-e2e/vm/setup.sh" >&2; exit 1; }

# Module files in load order, dependencies first, each once. modprobe -S resolves them for the guest
# kernel, not the running one (under VM_KERNEL_ROOT for an unpacked one); "builtin" lines (modules compiled in)
# need nothing loaded.
modules=$(for m in virtio_pci 9pnet_virtio 9p overlay; do
            modprobe ${VM_KERNEL_ROOT:+-d "$VM_KERNEL_ROOT"} -S "$kernel" --show-depends "$m"
          done | awk '$1 == "insmod" && !seen[$2]++ {print $2}')
[[ -n $modules ]] || { echo "build-initramfs: no modules resolved for kernel $kernel" >&2; exit 1; }

key=$( {
  echo "$kernel"
  # shellcheck disable=SC2086  # $modules: one path a line, none with spaces
  sha256sum "$VM_DIR/initramfs/init" "$VM_DIR/initramfs/vm-init" "${BASH_SOURCE[0]}" "$busybox" $modules \
    | awk '{print $1}'
} | sha256sum | cut -c1-16)
out_dir=$VM_WORK/initramfs/$kernel-$key
image=$out_dir/initramfs.cpio.gz
if [[ -s $image ]]; then
  echo "build-initramfs: cached $image" >&2
  echo "$image"; exit 0
fi

started=$(now_ms)
mkdir -p "$VM_WORK/initramfs"
staging=$(mktemp -d "$VM_WORK/initramfs/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
tree=$staging/tree
mkdir -p "$tree"/{bin,dev,proc,sys,modules}
cp "$busybox" "$tree/bin/busybox"
# The kernel opens /dev/console for init's stdin/stdout/stderr before init runs, i.e. before init can
# mount devtmpfs: without this node, everything stage 1 prints would be lost.
mknod -m 600 "$tree/dev/console" c 5 1
install -m 755 "$VM_DIR/initramfs/init" "$tree/init"
install -m 755 "$VM_DIR/initramfs/vm-init" "$tree/vm-init"
for path in $modules; do
  name=$(basename "$path")
  # busybox insmod takes plain .ko files; newer Debian kernels compress their modules.
  case $name in
    *.ko.xz) xz -dc "$path" > "$tree/modules/${name%.xz}"; name=${name%.xz} ;;
    *.ko.zst) zstd -qdc "$path" > "$tree/modules/${name%.zst}"; name=${name%.zst} ;;
    *.ko.gz) gzip -dc "$path" > "$tree/modules/${name%.gz}"; name=${name%.gz} ;;
    *) cp "$path" "$tree/modules/$name" ;;
  esac
  echo "$name" >> "$tree/modules/order"
done
(cd "$tree" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) | gzip -1 > "$staging/initramfs.cpio.gz"
# Publish atomically: a concurrent or interrupted build never leaves a half-written image in place.
mkdir -p "$out_dir"
mv "$staging/initramfs.cpio.gz" "$image.tmp.$$" && mv -f "$image.tmp.$$" "$image"
# This kernel's older images (other init scripts or modules) are no longer wanted, nor those of a kernel gone from
# /lib/modules and from fetch-kernel.sh's directory. Another kernel's stays: e2e.sh boots the host's kernel and an
# unpacked one in the same run, each with the image it built during the preparation.
for dir in "$VM_WORK"/initramfs/*-*/; do
  dir=${dir%/}
  [[ $dir != "$out_dir" ]] || continue
  other=${dir##*/}; other=${other%-*}
  if [[ $other == "$kernel" || ( ! -d /lib/modules/$other && ! -d $VM_KERNELS/$other ) ]]; then
    rm -rf "$dir"
  fi
done
echo "build-initramfs: built $image ($(du -k "$image" | cut -f1) KiB, $(wc -l < "$tree/modules/order") modules, $(( $(now_ms) - started )) ms)" >&2
echo "$image"
