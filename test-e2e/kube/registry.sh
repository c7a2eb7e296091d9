# The release the kube tier installs, made and published the way a maintainer does, into an OCI registry on
# this machine's loopback; sourced by run.sh. Sets REGISTRY (127.0.0.1:PORT), RELEASE_VERSION, PLUGIN_IMAGE
# (the released image, by its registry name: containerd pulls it from the registry) and CHART_REF (the chart's
# oci:// reference, for helm install). RELEASE_VERSION is 0.0.0-kube for a release built here, 0.0.0-check for the
# release tier's (release_and_publish).
#
# The registry is Debian's docker-registry (distribution 2.8) with its own configuration and storage under
# $WORK/registry, on a port the kernel picks (listening on port 0, then read back from the socket table: no
# port is guessed, none can be taken in between); a component like the others, stopped by cluster_down.

RELEASE_VERSION=0.0.0-kube

up_registry() {
    mkdir -p "$WORK/registry/data"
    cat >"$WORK/registry/config.yml" <<EOT
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $WORK/registry/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:0
EOT
    start_component registry docker-registry serve "$WORK/registry/config.yml"
    local pid
    pid=$(cat "$WORK/run/registry.pid")
    wait_until "the registry to listen" 30 registry_port "$pid" ||
        kube_fail "docker-registry did not listen (log: $WORK/logs/registry.log)"
    REGISTRY=127.0.0.1:$(registry_port "$pid")
    wait_until "the registry to answer /v2/" 30 curl -fsS -o /dev/null "http://$REGISTRY/v2/" ||
        kube_fail "the registry on $REGISTRY does not answer /v2/"
    # containerd's hosts entry for it (cluster.sh's config_path): plain HTTP, pull and resolve.
    mkdir -p "$WORK/containerd/certs.d/$REGISTRY"
    cat >"$WORK/containerd/certs.d/$REGISTRY/hosts.toml" <<EOT
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOT
    kube_log "registry on $REGISTRY (docker-registry $(docker-registry --version 2>/dev/null | awk '{ print $NF }'))"
}

# The port the registry's process listens on (pid given), if it listens yet.
registry_port() {
    ss -Hltnp 2>/dev/null | awk -v p="pid=$1," 'index($0, p) { n = split($4, a, ":"); print a[n]; found = 1; exit }
        END { exit !found }'
}

# make release with the image named in the loopback registry, then make publish into it. The release builds
# the jar from a copy of this working tree, so the image is the code under test, as the development jar is.
# The release tier's release (make release-check, which make test runs before this tier) is the same code when the
# tree has not changed since: then it is made again for this registry (deploy/release/for-registry.sh: the same
# image, by digest, and its chart packaged for the registry) instead of built a second time.
# deploy/release/check.sh names it in check-dist.tree: "TREE-ID VERSION".
CHECKED_RELEASE=$repo/.tools/release/check-dist
release_and_publish() {
    local dist=$WORK/dist checked_tree="" checked_version=""
    [[ -f $CHECKED_RELEASE.tree ]] && read -r checked_tree checked_version <"$CHECKED_RELEASE.tree"
    if [[ -n $checked_version && $checked_tree == "$(bash "$repo/deploy/release/tree-id.sh")" ]]; then
        RELEASE_VERSION=$checked_version
        bash "$repo/deploy/release/for-registry.sh" "$CHECKED_RELEASE" "$RELEASE_VERSION" \
            "$REGISTRY/blocknode/blocknode" "$dist" || kube_fail "the release tier's release could not be made for $REGISTRY"
        kube_log "release: the release tier's ($CHECKED_RELEASE, made from this tree), made for $REGISTRY"
    else
        IMAGE_REPOSITORY=$REGISTRY/blocknode/blocknode bash "$repo/deploy/release/release.sh" "$RELEASE_VERSION" "$dist" ||
            kube_fail "make release failed"
    fi
    bash "$repo/deploy/release/publish.sh" "$REGISTRY" "$dist" || kube_fail "make publish REGISTRY=$REGISTRY failed"
    PLUGIN_IMAGE=$REGISTRY/blocknode/blocknode:$RELEASE_VERSION
    CHART_REF=oci://$REGISTRY/blocknode/charts/blocknode
    HELM=$(bash "$repo/deploy/release/helm.sh") || kube_fail "no helm CLI"
    kube_log "release $RELEASE_VERSION published: $PLUGIN_IMAGE, $CHART_REF"
}
