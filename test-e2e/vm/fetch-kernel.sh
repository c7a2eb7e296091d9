#!/usr/bin/env bash
# Fetches one of Debian 13's kernels (trixie, or trixie-backports for the newest) and unpacks it under
# $VM_WORK/kernels/VERSION, without installing it on the host: nothing under /boot or /lib/modules changes, and the
# host's apt sources stay as they are (a private APT_CONFIG names trixie's suites, its own lists and cache). The
# guest boots it with VM_KERNEL_ROOT set to the directory this prints; the default guest kernel stays the host's.
#
#   test-e2e/vm/fetch-kernel.sh VERSION      e.g. 7.3.4+deb13-amd64 (trixie-backports) or 6.12.117+deb13-amd64
#
# Kernels from 7.0 on come as linux-binary-VERSION (the image), linux-modules-VERSION and linux-base-VERSION (its
# config, System.map and module lists); older ones as one linux-image-VERSION. The modules' index (modules.dep) is made here with depmod, as the package's postinst would.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ $# -eq 1 && $1 =~ ^[0-9][0-9a-z.+~-]*-amd64$ ]] || { sed -n '7p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 2; }
version=$1
kernels=$VM_WORK/kernels
root=$kernels/$version
if [[ -e $root/.complete ]]; then
  echo "$root"; exit 0
fi
if ! command -v dpkg-deb >/dev/null || ! command -v depmod >/dev/null; then
  echo "fetch-kernel: need dpkg-deb and depmod (kmod)" >&2; exit 1
fi

started=$(now_ms)
apt_dir=$kernels/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$apt_dir/sources.list" <<SOURCES
deb [signed-by=$keyring] http://deb.debian.org/debian trixie main
deb [signed-by=$keyring] http://deb.debian.org/debian trixie-backports main
SOURCES
# dpkg's status is an empty file: apt resolves nothing against the host's installed packages.
: > "$apt_dir/status"
cat > "$apt_dir/apt.conf" <<CONF
Dir::Etc::SourceList "$apt_dir/sources.list";
Dir::Etc::SourceParts "/nonexistent";
Dir::State::Lists "$apt_dir/lists";
Dir::State::status "$apt_dir/status";
Dir::Cache "$apt_dir/cache";
APT::Architecture "amd64";
CONF
export APT_CONFIG=$apt_dir/apt.conf
bash "$REPO_ROOT/scripts/apt.sh" update

if apt-cache show "linux-modules-$version" >/dev/null 2>&1; then
  packages=("linux-base-$version" "linux-binary-$version" "linux-modules-$version")
else
  packages=("linux-image-$version")
fi
staging=$(mktemp -d "$kernels/.fetch.XXXXXX")
trap 'rm -rf "$staging"' EXIT
(cd "$staging" && bash "$REPO_ROOT/scripts/apt.sh" download "${packages[@]}")
mkdir -p "$staging/root"
for deb in "$staging"/*.deb; do
  dpkg-deb -x "$deb" "$staging/root"
done
tree=$staging/root
# Debian 13 ships /usr/lib/modules; depmod and modprobe -d look under ROOT/lib/modules, as on a merged-/usr host.
[[ -e $tree/lib ]] || ln -s usr/lib "$tree/lib"
modules=$tree/lib/modules/$version
[[ -f $modules/modules.order ]] || { echo "fetch-kernel: no modules for $version in ${packages[*]}" >&2; exit 1; }
image=$modules/vmlinuz
[[ -f $image ]] || image=$tree/boot/vmlinuz-$version
[[ -f $image ]] || { echo "fetch-kernel: no kernel image for $version in ${packages[*]}" >&2; exit 1; }
depmod -b "$tree" "$version"
touch "$tree/.complete"
rm -rf "$root"
mv "$tree" "$root"
echo "fetch-kernel: $version from ${packages[*]} in $root ($(du -sm "$root" | cut -f1) MiB, $(( $(now_ms) - started )) ms)" >&2
echo "$root"
