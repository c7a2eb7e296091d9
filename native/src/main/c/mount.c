/*
 * mount(2) and umount2(2), unchanged.
 */
#include "blocknode.h"

#include <errno.h>
#include <sys/mount.h>

void JNICALL bn_mount(JNIEnv *env, jclass clazz, jstring j_source, jstring j_target,
                      jstring j_fs_type, jlong flags, jstring j_data) {
    (void) clazz;
    const char *source = NULL, *target = NULL, *fs_type = NULL, *data = NULL;

    if (bn_utf_get(env, j_source, "source", 1, &source) != 0
        || bn_utf_get(env, j_target, "target", 0, &target) != 0
        || bn_utf_get(env, j_fs_type, "fsType", 1, &fs_type) != 0
        || bn_utf_get(env, j_data, "data", 1, &data) != 0) {
        goto out;
    }
    if (mount(source, target, fs_type, (unsigned long) flags, data) != 0) {
        bn_throw_errno_from_to(env, "mount", source, target, errno);
    }
out:
    bn_utf_release(env, j_data, data);
    bn_utf_release(env, j_fs_type, fs_type);
    bn_utf_release(env, j_target, target);
    bn_utf_release(env, j_source, source);
}

void JNICALL bn_umount2(JNIEnv *env, jclass clazz, jstring j_target, jint flags) {
    (void) clazz;
    const char *target = NULL;

    if (bn_utf_get(env, j_target, "target", 0, &target) != 0) {
        return;
    }
    if (umount2(target, (int) flags) != 0) {
        bn_throw_errno(env, "umount2", target, errno);
    }
    bn_utf_release(env, j_target, target);
}
