#!/usr/bin/env bash
# Imports the archives of build.sh and test-images.sh into a throwaway containerd, as the Kubernetes test tier
# imports them (`ctr -n k8s.io images import`), and runs each: busybox's shell, the blocknode image's java and
# its plugin from the image's own entrypoint (Probe from inside the container), the real livenessprobe
# beside it (its /healthz, which calls that Probe), the registrar up to its registration socket, and pause
# until SIGTERM. Then stops everything it started and removes its directory: nothing is left running or
# mounted. Root. `make image-check` runs it after building the images.
#
# usage: deploy/image/check.sh
#
# The containerd is Debian's (installed if missing, with runc), with its own configuration, root, state and
# socket under a temporary directory, and its CRI plugin off; the machine's own containerd, if any, is not
# touched.
set -euo pipefail
what="image-check"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
ensure_packages "${check_packages[@]}"

blocknode=""
for archive in blocknode csi-node-driver-registrar livenessprobe pause busybox; do
    [[ -s $images/$archive.tar ]] || fail "no $images/$archive.tar: run make image and make test-images first"
done
ref_of() { # the image name an OCI archive's index gives
    tar -xOf "$images/$1.tar" index.json | grep -o '"org.opencontainers.image.ref.name":"[^"]*"' | cut -d'"' -f4
}
blocknode=$(ref_of blocknode)
registrar=$(ref_of csi-node-driver-registrar)
livenessprobe=$(ref_of livenessprobe)
pause=$(ref_of pause)
busybox=$(ref_of busybox)

dir=$(mktemp -d /tmp/bn-image-check.XXXXXX)
passed=0 failed=0
ok() { passed=$((passed + 1)); log "ok: $*"; }
not_ok() { failed=$((failed + 1)); log "FAILED: $*"; }

cleanup() {
    local rc=$?
    containerd_down "$dir" || rc=1
    exit "$rc"
}
trap cleanup EXIT
containerd_up "$dir"

for archive in blocknode csi-node-driver-registrar livenessprobe pause busybox; do
    started=$SECONDS
    if ctr_ images import "$images/$archive.tar" >/dev/null; then
        ok "imported $archive.tar in $((SECONDS - started)) s"
    else
        not_ok "import of $archive.tar"
    fi
done
listed=$(ctr_ images ls -q)
for ref in "$blocknode" "$registrar" "$livenessprobe" "$pause" "$busybox"; do
    if grep -qx "$ref" <<<"$listed"; then ok "ctr images ls: $ref"; else not_ok "ctr images ls lacks $ref: $listed"; fi
done

# shellcheck disable=SC2016 # $(...) is for the container's shell
if out=$(ctr_ run --rm "$busybox" check-busybox sh -c 'echo busybox $(ls /bin | wc -l) applets; touch /tmp/x && ls -ld /tmp' 2>&1) &&
        [[ $out == *"applets"*"drwxrwxrwt"* ]]; then
    ok "busybox: $(tr '\n' ' ' <<<"$out")"
else
    not_ok "busybox: $out"
fi

if out=$(ctr_ run --rm "$blocknode" check-java java -version 2>&1) && [[ $out == *"Runtime Environment"* ]]; then
    ok "blocknode java -version: $(sed -n 2p <<<"$out")"
else
    not_ok "blocknode java -version: $out"
fi

# The plugin as the image starts it (its entrypoint, no arguments: the defaults are the DaemonSet's socket,
# kubelet root and state directory), with those directories from the host and the host's network.
mkdir -p "$dir/csi" "$dir/state-dir" "$dir/kubelet/plugins_registry"
started=$(date +%s%N)
ctr_ run -d --net-host --privileged --env NODE_NAME=image-check --log-uri "file://$dir/plugin.log" \
    --mount "type=bind,src=$dir/csi,dst=/csi,options=rbind:rw" \
    --mount "type=bind,src=$dir/kubelet,dst=/var/lib/kubelet,options=rbind:rw" \
    --mount "type=bind,src=$dir/state-dir,dst=/var/lib/blocknode,options=rbind:rw" \
    "$blocknode" check-plugin || true
for _ in $(seq 300); do [[ -S $dir/csi/csi.sock ]] && break; sleep 0.02; done
if [[ -S $dir/csi/csi.sock ]]; then
    ok "plugin listening on its socket $(( ($(date +%s%N) - started) / 1000000 )) ms after ctr run -d"
else
    not_ok "plugin socket did not appear: $(tail -n 5 "$dir/plugin.log" 2>&1)"
fi
if out=$(ctr_ tasks exec --exec-id probe check-plugin java -jar /app/blocknode.jar client --endpoint unix:///csi/csi.sock Probe 2>&1) &&
        [[ $out == *"value: true"* ]]; then
    ok "Probe from inside the container: ready"
else
    not_ok "Probe: $out"
fi
# The AOT cache fits this JVM, jar and jvm.args: with -XX:AOTMode=on the JVM refuses to start otherwise.
if out=$(ctr_ tasks exec --exec-id aot check-plugin java @/app/jvm.args -XX:AOTCache=/app/blocknode.aot -XX:AOTMode=on \
        -jar /app/blocknode.jar --help 2>&1); then
    ok "the image's AOT cache is usable (-XX:AOTMode=on)"
else
    not_ok "the image's AOT cache is not usable: $(tail -n 3 <<<"$out")"
fi

ctr_ run -d --net-host --log-uri "file://$dir/livenessprobe.log" \
    --mount "type=bind,src=$dir/csi,dst=/csi,options=rbind:rw" \
    "$livenessprobe" check-livenessprobe /livenessprobe --csi-address=/csi/csi.sock \
    --http-endpoint=127.0.0.1:19808 --probe-timeout=3s || true
health=""
for _ in $(seq 50); do
    health=$(curl -s -m 5 -w ' %{http_code}' http://127.0.0.1:19808/healthz 2>/dev/null) && break
    sleep 0.1
done
if [[ $health == *" 200" ]]; then
    ok "livenessprobe /healthz through the plugin's Probe: $health"
else
    not_ok "livenessprobe /healthz: ${health:-no answer} ($(tail -n 3 "$dir/livenessprobe.log" 2>&1))"
fi

ctr_ run -d --log-uri "file://$dir/registrar.log" --mount "type=bind,src=$dir/csi,dst=/csi,options=rbind:rw" \
    --mount "type=bind,src=$dir/kubelet/plugins_registry,dst=/registration,options=rbind:rw" \
    "$registrar" check-registrar /csi-node-driver-registrar --csi-address=/csi/csi.sock \
    --kubelet-registration-path=/var/lib/kubelet/plugins/block.csi.blocknode.dev/csi.sock --v=2 || true
registration=$dir/kubelet/plugins_registry/block.csi.blocknode.dev-reg.sock
for _ in $(seq 100); do [[ -S $registration ]] && break; sleep 0.1; done
if [[ -S $registration ]]; then
    ok "registrar asked the plugin its name and opened its registration socket for kubelet"
else
    not_ok "registrar: no registration socket in $dir/kubelet/plugins_registry ($(tail -n 3 "$dir/registrar.log" 2>&1))"
fi

# stopped NAME: whether the task has stopped, waiting up to 10 s.
stopped() {
    local _
    for _ in $(seq 100); do
        [[ $(ctr_ tasks ls | awk -v id="$1" '$1 == id { print $3 }') == STOPPED ]] && return 0
        sleep 0.1
    done
    return 1
}
ctr_ run -d --log-uri "file://$dir/pause.log" "$pause" check-pause || true
sleep 0.5
ctr_ tasks kill --signal SIGTERM check-pause || true
if stopped check-pause; then
    ok "pause ran and stopped on SIGTERM: $(cat "$dir/pause.log")"
else
    not_ok "pause did not stop on SIGTERM"
fi

# The plugin stops on SIGTERM as under kubelet, within its shutdown grace.
ctr_ tasks kill --signal SIGTERM check-plugin || true
if stopped check-plugin; then ok "plugin stopped on SIGTERM"; else not_ok "plugin still running 10 s after SIGTERM"; fi

log "$passed passed, $failed failed in $(elapsed)"
((failed == 0))
