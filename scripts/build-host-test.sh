#!/usr/bin/env bash
# scripts/build-host.sh (make image's and make release's check of the toolchain) and scripts/find-jdk.sh, on a
# fabricated machine: a PATH of links to the few tools the scripts use plus a stand-in go that answers as the
# version it is told to be, and JDK directories (a release file, javac) under a stand-in /usr/lib/jvm
# (BLOCKNODE_JVM_DIR). Nothing of the real machine's JDKs or Go is seen. The release tier runs it first
# (deploy/release/check.sh); it needs no root and takes a second.
#
# usage: scripts/build-host-test.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
passed=0 failed=0
# The machine's own JDK is none of this test's (make exports the one it found): a case gives JAVA_HOME itself.
unset JAVA_HOME
work=$(mktemp -d /tmp/bn-build-host-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
need=$(awk '$1 == "go" { print $2; exit }' "$here/../deploy/validate/go.mod")

bin=$work/bin
mkdir -p "$bin" "$work/jvm"
for tool in bash sed awk sort head cat dirname env mktemp rm tr; do
    ln -s "$(type -P "$tool")" "$bin/$tool"
done
# The stand-in go: `go version` and `go env GOTOOLCHAIN` as the Go it plays (FAKE_GO, FAKE_GOTOOLCHAIN).
cat >"$work/go" <<'EOF'
#!/usr/bin/env bash
case "$1 ${2:-}" in
    "version "*) echo "go version go$FAKE_GO linux/amd64" ;;
    "env GOTOOLCHAIN") echo "${FAKE_GOTOOLCHAIN:-}" ;;
    *) exit 2 ;;
esac
EOF
chmod +x "$work/go"

# jdk NAME FEATURE: a JDK home under the stand-in /usr/lib/jvm.
jdk() {
    mkdir -p "$work/jvm/$1/bin"
    printf 'JAVA_VERSION="%s.0.2"\n' "$2" >"$work/jvm/$1/release"
    ln -sf "$(type -P true)" "$work/jvm/$1/bin/javac"
}
with_go() { ln -sf "$work/go" "$bin/go"; }
without_go() { rm -f "$bin/go"; }

out=$work/out
# run SCRIPT ARGS...: the script on the fabricated machine, its output (both streams) in $out, its exit code in $rc.
run() {
    local script=$1; shift
    env -i PATH="$bin" BLOCKNODE_JVM_DIR="$work/jvm" FAKE_GO="${FAKE_GO:-}" FAKE_GOTOOLCHAIN="${FAKE_GOTOOLCHAIN:-}" \
        ${JAVA_HOME:+JAVA_HOME="$JAVA_HOME"} bash "$here/$script" "$@" >"$out" 2>&1
    rc=$?
}
check() { # NAME COMMAND...: one check, its result counted
    local name=$1; shift
    if "$@"; then
        passed=$((passed + 1)); echo "  ok    $name"
    else
        failed=$((failed + 1)); echo "  FAIL  $name (exit $rc)"
        sed 's/^/          | /' "$out"
    fi
}
says() { # every TEXT is in the output
    local text
    for text in "$@"; do grep -qF -- "$text" "$out" || { echo "          missing: $text"; return 1; }; done
}
says_not() { ! grep -qF -- "$1" "$out"; }
failed_saying() { ((rc == 1)) && says "$@"; }
exited() { ((rc == $1)); }
printed() { [[ $(cat "$out") == "$1" ]]; }
quiet_pass() { ((rc == 0)) && [[ ! -s $out ]]; }

echo "build-host-test: a machine with neither a JDK nor Go"
without_go
run build-host.sh release
check "make release stops, saying what to install for the JDK and where from" \
    failed_saying "make release needs on this machine" "a JDK 25" "found none in \$JAVA_HOME or $work/jvm" \
    "temurin-25-jdk" "https://adoptium.net/installation/linux/" "openjdk-25-jdk-headless"
check "... and for Go, from go.mod's go line" \
    failed_saying "Go $need or later (deploy/validate/go.mod)" "no go on PATH" "https://go.dev/dl/" \
    "/usr/local/go" "bookworm-backports" "GOTOOLCHAIN=auto" "Debian 12's golang-go is 1.19"
check "... and offers the route that needs neither" \
    failed_saying "make image-from-source" "deploy/Containerfile.source" "docs/install.md#what-a-build-host-needs"
run build-host.sh image
check "make image stops for the JDK alone (an image needs no Go)" \
    failed_saying "make image needs on this machine" "a JDK 25"
check "... and does not ask for Go" says_not "Go $need"

echo "build-host-test: Debian 12's OpenJDK 17 and golang-go 1.19, and a JDK 21"
jdk java-17-openjdk-amd64 17
jdk temurin-21-jdk-amd64 21
with_go
FAKE_GO=1.19.8 run build-host.sh release
check "the JDKs found are named, and none is taken" \
    failed_saying "found only $work/jvm/java-17-openjdk-amd64 (17), $work/jvm/temurin-21-jdk-amd64 (21)"
check "the Go found is named with its version" failed_saying "$work/bin/go is go1.19.8"
run find-jdk.sh
check "find-jdk.sh takes the JDK 21 for make unit" printed "$work/jvm/temurin-21-jdk-amd64"
run find-jdk.sh 25
check "find-jdk.sh 25 refuses both and suggests Temurin 25 and Debian 13's OpenJDK 25" \
    failed_saying "temurin-25-jdk" "openjdk-25-jdk-headless"
check "... never a package Debian 12 lacks (openjdk-21-jdk-headless)" says_not "openjdk-21"

echo "build-host-test: a JDK 25 and a Go that will do"
jdk temurin-25-jdk-amd64 25
FAKE_GO=$need run build-host.sh release
check "make release goes on, silently" quiet_pass
FAKE_GO=1.24.4 FAKE_GOTOOLCHAIN=auto run build-host.sh release
check "a Go >= 1.21 that may fetch go$need (GOTOOLCHAIN=auto) will do" quiet_pass
FAKE_GO=1.24.4 FAKE_GOTOOLCHAIN=local run build-host.sh release
check "... with GOTOOLCHAIN=local (Debian's) it will not, and says so" \
    failed_saying "is go1.24.4 (GOTOOLCHAIN=local)" "GOTOOLCHAIN=auto"
rm -rf "$work/jvm/temurin-25-jdk-amd64"
jdk elsewhere-25 25
mv "$work/jvm/elsewhere-25" "$work/elsewhere-25"
FAKE_GO=$need JAVA_HOME=$work/elsewhere-25 run build-host.sh release
check "a JDK 25 named by JAVA_HOME outside /usr/lib/jvm will do" quiet_pass

echo "build-host-test: $passed passed, $failed failed"
((failed == 0))
