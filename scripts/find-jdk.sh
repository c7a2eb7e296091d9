#!/usr/bin/env bash
# Prints the home of the newest installed JDK whose feature version is >= MIN (default 21, the project's minimum
# for building and testing; an image or a release needs 25: scripts/build-host.sh), considering $JAVA_HOME and
# everything under /usr/lib/jvm (BLOCKNODE_JVM_DIR instead, for the tests). Fails with a message that names
# the JDKs it found and what to install where there is none.
#
# usage: scripts/find-jdk.sh [MIN]
set -euo pipefail
min=${1:-21}
[[ $min =~ ^[0-9]+$ ]] || { echo "usage: scripts/find-jdk.sh [MIN]" >&2; exit 2; }
jvm_dir=${BLOCKNODE_JVM_DIR:-/usr/lib/jvm}
best=""; best_version=0
found=()
candidates=()
[[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME")
for dir in "$jvm_dir"/*; do [[ -e $dir ]] && candidates+=("$dir"); done
for home in "${candidates[@]}"; do
  [[ -x "$home/bin/javac" && -f "$home/release" ]] || continue
  version=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")
  [[ -n "$version" ]] || continue
  found+=("$home ($version)")
  if (( version >= min && version > best_version )); then
    best="$home"; best_version=$version
  fi
done
if [[ -z "$best" ]]; then
  if ((${#found[@]} == 0)); then
    seen="none in \$JAVA_HOME or $jvm_dir"
  else
    seen="only $(printf '%s, ' "${found[@]}" | sed 's/, $//')"
  fi
  # Debian 12 packages OpenJDK 17 and no later one; Debian 13 (trixie) packages 25. Temurin is Adoptium's build.
  echo "find-jdk: a JDK >= $min is needed; found $seen." >&2
  echo "A JDK 25 serves every target (make unit needs 21, make image and make release 25). Debian 12 has only" >&2
  echo "OpenJDK 17: install Temurin 25 from Adoptium's apt repository (https://adoptium.net/installation/linux/," >&2
  echo "then apt-get install temurin-25-jdk), or unpack its tarball under $jvm_dir or where JAVA_HOME names." >&2
  echo "Debian 13: apt-get install openjdk-25-jdk-headless." >&2
  exit 1
fi
echo "$best"
