#!/usr/bin/env bash
# Prints the home of the newest installed JDK whose feature version is >= 21 (the project's minimum),
# considering $JAVA_HOME and everything under /usr/lib/jvm. Fails with a clear message if there is none.
set -euo pipefail
min=21
best=""; best_version=0
candidates=()
[[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME")
for dir in /usr/lib/jvm/*; do candidates+=("$dir"); done
for home in "${candidates[@]}"; do
  [[ -x "$home/bin/javac" && -f "$home/release" ]] || continue
  version=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")
  [[ -n "$version" ]] || continue
  if (( version >= min && version > best_version )); then
    best="$home"; best_version=$version
  fi
done
if [[ -z "$best" ]]; then
  echo "blocknode needs a JDK >= $min (found none in \$JAVA_HOME or /usr/lib/jvm)." >&2
  echo "Install one, e.g. 'apt-get install openjdk-21-jdk-headless' or a Temurin 21/25 JDK, and retry." >&2
  exit 1
fi
echo "$best"
