# The images the kube tier imports into containerd, all built offline by deploy/image (buildah); sourced by
# run.sh. Sets PLUGIN_IMAGE, PAUSE_IMAGE, BUSYBOX_IMAGE and IMAGE_ARCHIVES, and DEPLOY_VALIDATE (the
# renderer of the Helm chart, from deploy/validate).

build_images() { # plugin jar
    local archive ref
    IMAGE_ARCHIVES=()
    read -r archive ref < <(bash "$repo/deploy/image/build.sh" "$1") || kube_fail "blocknode's image did not build"
    [[ -f $archive && -n $ref ]] || kube_fail "deploy/image/build.sh printed no archive and reference"
    IMAGE_ARCHIVES+=("$archive")
    PLUGIN_IMAGE=$ref
    while read -r archive ref; do
        IMAGE_ARCHIVES+=("$archive")
        case $ref in
            */pause:*) PAUSE_IMAGE=$ref ;;
            */busybox:*) BUSYBOX_IMAGE=$ref ;;
        esac
    done < <(bash "$repo/deploy/image/test-images.sh" || echo "FAILED -")
    [[ ${IMAGE_ARCHIVES[-1]} != FAILED ]] || kube_fail "the test images did not build"
    [[ -n ${PAUSE_IMAGE:-} && -n ${BUSYBOX_IMAGE:-} ]] || kube_fail "deploy/image/test-images.sh made no pause or busybox image"
    DEPLOY_VALIDATE=$repo/.tools/bin/deploy-validate
    (cd "$repo/deploy/validate" && go build -o "$DEPLOY_VALIDATE" .) || kube_fail "deploy/validate did not build"
    kube_log "images: $PLUGIN_IMAGE, $PAUSE_IMAGE, $BUSYBOX_IMAGE and the sidecars (${#IMAGE_ARCHIVES[@]} archives)"
}
