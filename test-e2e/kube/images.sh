# The images the kube tier imports into containerd beside blocknode's (which containerd pulls from the loopback
# registry: registry.sh), all built offline by deploy/image (buildah); sourced by run.sh. Sets PAUSE_IMAGE,
# BUSYBOX_IMAGE and IMAGE_ARCHIVES, and DEPLOY_VALIDATE (the renderer of the Helm chart, from deploy/validate).

build_test_images() {
    local archive ref
    IMAGE_ARCHIVES=()
    while read -r archive ref; do
        IMAGE_ARCHIVES+=("$archive")
        case $ref in
            */pause:*) PAUSE_IMAGE=$ref ;;
            */busybox:*) BUSYBOX_IMAGE=$ref ;;
        esac
    done < <(bash "$repo/deploy/image/test-images.sh" || echo "FAILED -")
    ((${#IMAGE_ARCHIVES[@]})) && [[ ${IMAGE_ARCHIVES[-1]} != FAILED ]] || kube_fail "the test images did not build"
    [[ -n ${PAUSE_IMAGE:-} && -n ${BUSYBOX_IMAGE:-} ]] || kube_fail "deploy/image/test-images.sh made no pause or busybox image"
    DEPLOY_VALIDATE=$repo/.tools/bin/deploy-validate
    (cd "$repo/deploy/validate" && go build -o "$DEPLOY_VALIDATE" .) || kube_fail "deploy/validate did not build"
    kube_log "images: $PAUSE_IMAGE, $BUSYBOX_IMAGE and the sidecars (${#IMAGE_ARCHIVES[@]} archives)"
}
