#!/usr/bin/env bash
# Fetches one of Debian 13's kernels (trixie, or trixie-backports for the newest) and unpacks it under
# $VM_KERNELS/VERSION (machine-wide: ~/.cache/blocknode/kernels, see common.sh), without installing it on the
# host: nothing under /boot or /lib/modules changes, and the host's apt sources stay as they are (a private
# APT_CONFIG names trixie's suites, its own lists and cache). The guest boots it with VM_KERNEL_ROOT set to the
# directory this prints; the default guest kernel stays the host's.
#
#   test-e2e/vm/fetch-kernel.sh VERSION|SUITE   7.3.4+deb13-amd64, say, or trixie / trixie-backports
#
# A SUITE stands for the newest kernel that suite serves now: the one its linux-image-amd64 depends on, read from
# the lists just updated (so no version is pinned that the archive drops when backports moves on). A kernel already
# unpacked is reused when it is still that version. A kernel no suite names any more is removed once unused for a
# day (another checkout's run may still be booting it). One fetch at a time on the machine (a lock). When
# the lists cannot be updated, the kernel last fetched for the suite is used if it is still here, with a warning;
# with none, this fails and says so. e2e.sh calls it for a scenario whose header names a suite ("# vm-kernel:").
#
# Kernels from 7.0 on come as linux-binary-VERSION (the image), linux-modules-VERSION and linux-base-VERSION (its
# config, System.map and module lists); older ones as one linux-image-VERSION. The modules' index (modules.dep) is
# made here with depmod, as the package's postinst would.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SUITES=(trixie trixie-backports)
usage() { grep -m1 '^#   test-e2e/vm/fetch-kernel.sh ' "${BASH_SOURCE[0]}" | sed 's/^#  */usage: /' >&2; exit 2; }
[[ $# -eq 1 ]] || usage
suite=""
if [[ " ${SUITES[*]} " == *" $1 "* ]]; then
  suite=$1
elif [[ ! $1 =~ ^[0-9][0-9a-z.+~-]*-amd64$ ]]; then
  usage
fi
kernels=$VM_KERNELS
if [[ -z $suite && -e $kernels/$1/.complete ]]; then
  touch "$kernels/$1/.complete" # used now: not removed for a day
  echo "$kernels/$1"; exit 0
fi
mkdir -p "$kernels"
exec {lock}>"$kernels/.lock"
flock -w 900 "$lock" || { echo "fetch-kernel: $kernels/.lock still held after 900 s (another fetch)" >&2; exit 1; }
if ! command -v dpkg-deb >/dev/null || ! command -v depmod >/dev/null; then
  echo "fetch-kernel: need dpkg-deb (dpkg) and depmod (kmod): run test-e2e/vm/setup.sh" >&2; exit 1
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
# newest_of SUITE: the kernel version SUITE's linux-image-amd64 depends on (7.3.4+deb13-amd64), from the lists.
newest_of() {
  local meta
  meta=$(apt-cache -o APT::Default-Release="$1" policy linux-image-amd64 | awk '/Candidate:/ { print $2 }')
  [[ -n $meta && $meta != "(none)" ]] || return 1
  apt-cache show "linux-image-amd64=$meta" | sed -n 's/^Depends: //p' | head -n 1 |
    grep -oE 'linux-(image|binary)-[0-9][0-9a-z.+~-]*-amd64' | head -n 1 | sed -E 's/^linux-(image|binary)-//'
}
last=""
[[ -z $suite ]] || last=$(cat "$kernels/$suite.last" 2>/dev/null || true)
if ! bash "$REPO_ROOT/scripts/apt.sh" update; then
  if [[ -n $last && -e $kernels/$last/.complete ]]; then
    echo "fetch-kernel: WARNING: deb.debian.org's lists could not be updated; using $last, the kernel last fetched for $suite" >&2
    echo "$kernels/$last"; exit 0
  fi
  echo "fetch-kernel: could not update the lists of ${suite:-trixie} from deb.debian.org (see above)${suite:+, and no kernel of it is unpacked under $kernels}" >&2
  exit 1
fi
if [[ -n $suite ]]; then
  version=$(newest_of "$suite") && [[ $version =~ ^[0-9][0-9a-z.+~-]*-amd64$ ]] ||
    { echo "fetch-kernel: $suite's lists name no kernel (no linux-image-amd64 with a linux-image-*/linux-binary-* dependency)" >&2; exit 1; }
  echo "fetch-kernel: the newest kernel of $suite is $version" >&2
else
  version=$1
fi
root=$kernels/$version
# remember: records the suite's kernel and marks it used now; removes the kernels that no suite names and that
# nothing used for a day (a run of another checkout may still boot a suite's kernel before this one).
remember() {
  touch "$root/.complete"
  [[ -n $suite ]] || return 0
  echo "$version" > "$kernels/$suite.last"
  local old name
  for old in "$kernels"/*-amd64; do
    name=${old##*/}
    [[ -d $old && $name != "$version" ]] || continue
    if grep -qxF "$name" "$kernels"/*.last; then continue; fi
    if [[ ! -e $old/.complete || -n $(find "$old/.complete" -mmin +1440) ]]; then
      echo "fetch-kernel: removing $name, no suite's kernel now and unused for a day" >&2
      rm -rf "$old"
    fi
  done
}
if [[ -e $root/.complete ]]; then
  remember
  echo "$root"; exit 0
fi

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
remember
echo "fetch-kernel: $version from ${packages[*]} in $root ($(du -sm "$root" | cut -f1) MiB, $(( $(now_ms) - started )) ms)" >&2
echo "$root"
