#!/usr/bin/env bash
# The Java runtime of blocknode's image, made by jlink from the build JDK (scripts/find-jdk.sh 25: the newest JDK
# 25 or later, which the jar is built and tested with where it is the newest); prints its directory on stdout (what
# it did goes to stderr).
#
# usage: deploy/image/jre.sh [PLUGIN_JAR]      (default java/target/blocknode.jar)
#
# Cached machine-wide as images/jre-HASH (scripts/cache.sh: ~/.cache/blocknode by default), HASH covering the
# JDK's release file, the modules and the jlink options. The jar is checked against the module list on every
# call (jdeps, cached by the jar's sha256): a module it needs that is neither listed nor known to be unneeded fails
# the build.
set -euo pipefail
what="image-jre"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
[[ -f $jar ]] || fail "no plugin jar at $jar; build it first (make build)"
# JDK 25 at least: the image's JVM flags (deploy/jvm.args) and its AOT cache are JDK 25's.
jdk=$("$repo/scripts/find-jdk.sh" 25) || fail "no JDK >= 25 found (scripts/build-host.sh image says what to install)"
feature=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$jdk/release")
[[ -x $jdk/bin/jlink && -x $jdk/bin/jdeps ]] || fail "$jdk has no jlink or jdeps"

# What `jdeps --print-module-deps` finds in the jar, less java.desktop and java.sql, plus what those two
# brought in transitively and the plugin uses (java.logging; java.management comes with jdk.management):
#   java.desktop  only java.beans, for Micrometer's Log4j2/Logback metric binders, which the plugin does not use
#   java.sql      Micrometer's database binders, Gson's optional java.sql.Date adapters and Commons CSV's printing
#                 of JDBC result sets (blocknode pv only parses CSV: PvLimitsUnitTest's run needs none), unused
# With this runtime the AOT training run (every kubelet and sidecar call, a metrics scrape) logs the same as
# with the full list, `--demo` stages, publishes, reports usage, unpublishes and unstages a loop volume, and
# test-e2e/sanity/run-sanity.sh with JAVA=<this runtime>/bin/java passes csi-sanity's mount and block runs.
modules=(java.base java.logging java.naming jdk.httpserver jdk.jfr jdk.management jdk.unsupported)
unneeded=(java.desktop java.sql)
# --compress zip-6: 45 instead of 60 MiB; start time is the same (the AOT cache holds the loaded classes).
# No --generate-cds-archive: the plugin starts from its AOT cache, which supersedes the default CDS archive
# (28 MiB for two archives).
options=(--strip-debug --no-header-files --no-man-pages --compress=zip-6)

mkdir -p "$cache"
sha=$(sha256sum "$jar" | cut -d' ' -f1)
if [[ -s $cache/jdeps.txt && $(head -n1 "$cache/jdeps.txt") == "$sha $feature" ]]; then
    needed=$(sed -n 2p "$cache/jdeps.txt")
else
    log "jdeps $jar"
    needed=$("$jdk/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release "$feature" "$jar")
    printf '%s\n%s\n' "$sha $feature" "$needed" >"$cache/jdeps.txt"
fi
unlisted=()
for module in ${needed//,/ }; do
    [[ " ${modules[*]} ${unneeded[*]} " == *" $module "* ]] || unlisted+=("$module")
done
((${#unlisted[@]} == 0)) ||
    fail "the jar needs ${unlisted[*]}, which deploy/image/jre.sh does not put into the runtime: add them to its modules"

key=$( { cat "$jdk/release"; printf '%s\n' "${modules[@]}" "${options[@]}"; } | sha256sum | cut -c1-16)
out=$cache/jre-$key
if [[ -x $out/bin/java ]]; then
    log "$(sed -n 's/^IMPLEMENTOR_VERSION="\(.*\)"/\1/p' "$jdk/release") with ${modules[*]}: $out (cached)"
    echo "$out"
    exit 0
fi
tmp=$(mktemp -d "$cache/jre-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rmdir "$tmp" # jlink creates its --output itself
"$jdk/bin/jlink" --add-modules "$(IFS=,; echo "${modules[*]}")" "${options[@]}" --output "$tmp" >&2
mv "$tmp" "$out"
for old in "$cache"/jre-*; do
    [[ $old == "$out" ]] || rm -rf "$old"
done
log "$out ($(du -sm "$out" | cut -f1) MiB, from $jdk) in $(elapsed)"
echo "$out"
