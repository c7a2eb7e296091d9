#!/bin/bash
# Training run for the JVM's AOT cache (JDK 25: JEP 483/514/515), run once at image build time: start the
# plugin as in production but on a private socket, make the calls kubelet and the sidecars make, stop it
# with SIGTERM; the JVM then writes the classes it loaded and linked to the cache. Any failing call fails
# the build (Probe also checks that the image has the host tools the plugin needs).
#   aot-training.sh JAR CACHE JVM_ARGS_FILE
set -euo pipefail
jar=$1 cache=$2 jvm_args=$3
work=$(mktemp -d)
# The metrics port is the kernel's choice, read back from the plugin's log: a fixed one collided when two
# training runs shared a host (an image build beside make bench), and the plugin that lost exited at once.
java @"$jvm_args" -XX:AOTCacheOutput="$cache" -jar "$jar" --endpoint="unix://$work/csi.sock" \
    --kubelet-root="$work/kubelet" --state-dir="$work/state" --metrics-address=127.0.0.1:0 \
    --node-id=aot-training > >(tee "$work/plugin.log") 2>&1 &
pid=$!
port=
for _ in $(seq 150); do
    # (tee may not have made the file yet: sed then finds nothing, which is no failure)
    port=$(sed -n 's|.*metrics at http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$work/plugin.log" 2>/dev/null || true)
    port=${port%%$'\n'*}
    [[ -S $work/csi.sock && -n $port ]] && break
    sleep 0.2
done
[[ -n $port ]] || { echo "aot-training: the plugin did not start (no metrics port in its log)" >&2; kill "$pid"; exit 1; }
client() { java -jar "$jar" client --endpoint "unix://$work/csi.sock" "$@" >/dev/null; }
for rpc in Probe GetPluginInfo GetPluginCapabilities NodeGetInfo NodeGetCapabilities; do client "$rpc"; done
# An error answer (NOT_FOUND: nothing is staged) trains the error path too.
client NodeGetVolumeStats "volume_id: \"training\" volume_path: \"$work/kubelet/x\"" || [[ $? == 5 ]]
# One Prometheus scrape.
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -q '^HTTP/1.[01] 200' <&3
exec 3<&-
kill -TERM "$pid"
wait "$pid" || true # 143 after SIGTERM; the cache is written before the JVM exits
rm -rf "$work"
test -s "$cache"
