/*
 * mount(2) and umount2(2), unchanged.
 */
#include "blocknode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* Throws err for mount, naming "source -> target" as the path. */
static void throw_mount_error(JNIEnv *env, const char *source, const char *target, int err) {
    const char *shown_source = source != NULL ? source : "(null)";
    size_t length = strlen(shown_source) + strlen(" -> ") + strlen(target) + 1;
    char *path = malloc(length);
    if (path == NULL) {
        bn_throw_oom(env, "libblocknode: mount error message");
        return;
    }
    snprintf(path, length, "%s -> %s", shown_source, target);
    bn_throw_errno(env, "mount", path, err);
    free(path);
}

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
        throw_mount_error(env, source, target, errno);
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
