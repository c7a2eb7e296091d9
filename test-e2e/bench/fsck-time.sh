#!/bin/bash
# How long the preen before an ext4 mount (e2fsck -p, docs/volumes.md#fsck-before-mount) takes on a 10 GiB
# filesystem with files: clean (what most stages see), not cleanly unmounted (checked whole), and forced (-f).
# Root; a sparse file on a loop device under /tmp, all of it removed on exit. Not part of make bench: the figure
# is in docs/design/performance.md#fsck-before-mount.
set -euo pipefail
dir=$(mktemp -d /tmp/bn-fsck-time.XXXXXX)
mnt=$dir/mnt
mkdir -p "$mnt"
truncate -s 10G "$dir/fs.img"
# Direct I/O: reads go to the disk, not to the backing file's page cache (a LUN has none below the device).
loop=$(losetup --find --show --direct-io=on "$dir/fs.img")
cleanup() {
    losetup --detach "$loop"
    rm -rf "$dir"
}
trap cleanup EXIT

# As blocknode formats a blank device (FilesystemType.EXT4).
mkfs.ext4 -q -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$loop"
# Filled in a private mount namespace: a mount namespace another process makes meanwhile (a container starting
# on a shared machine) would otherwise keep a copy of the mount, and the filesystem busy, after the umount.
# 100 directories of 200 files of 4 KiB (20,000 files), and 8 files of 256 MiB: about 2.1 GiB used.
unshare --mount --propagation private bash -euo pipefail -c '
    mount "$1" "$2"
    for d in $(seq 1 100); do
        mkdir "$2/d$d"
        for f in $(seq 1 200); do head -c 4096 /dev/urandom > "$2/d$d/f$f"; done
    done
    for f in $(seq 1 8); do dd if=/dev/urandom of="$2/big$f" bs=1M count=256 status=none; done
    sync
    df -h "$2" | tail -1
    df -i "$2" | tail -1
    umount "$2"
' fill "$loop" "$mnt"

# One e2fsck, its exit status and its wall time, with the loop device's page cache dropped first.
timed() {
    blockdev --flushbufs "$loop"
    local start end status=0
    start=$(date +%s%N)
    timeout 600 e2fsck "$@" "$loop" > "$dir/e2fsck.out" 2>&1 || status=$?
    end=$(date +%s%N)
    printf 'e2fsck %-5s exit %d  %4d ms\n' "$*" "$status" $(( (end - start) / 1000000 ))
    if (( status >= 4 )); then sed 's/^/    /' "$dir/e2fsck.out"; fi
}
for _ in 1 2 3; do timed -p; done
for _ in 1 2 3; do
    debugfs -w -R "ssv state 0" "$loop" > /dev/null 2>&1 # as after a crash: not cleanly unmounted
    timed -p
done
for _ in 1 2 3; do timed -f -p; done
