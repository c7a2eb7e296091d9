/*
 * statvfs(3) and fstatvfs(3): capacity and inode counts of the file system holding a path or a descriptor.
 */
#include "blocknode.h"

#include <errno.h>
#include <stdio.h>
#include <sys/statvfs.h>

static jlongArray to_array(JNIEnv *env, const struct statvfs *sv) {
    jlong values[BN_STATVFS_LENGTH];
    values[BN_STATVFS_BSIZE] = (jlong) sv->f_bsize;
    values[BN_STATVFS_FRSIZE] = (jlong) sv->f_frsize;
    values[BN_STATVFS_BLOCKS] = (jlong) sv->f_blocks;
    values[BN_STATVFS_BFREE] = (jlong) sv->f_bfree;
    values[BN_STATVFS_BAVAIL] = (jlong) sv->f_bavail;
    values[BN_STATVFS_FILES] = (jlong) sv->f_files;
    values[BN_STATVFS_FFREE] = (jlong) sv->f_ffree;
    values[BN_STATVFS_FAVAIL] = (jlong) sv->f_favail;
    values[BN_STATVFS_FLAG] = (jlong) sv->f_flag;
    return bn_new_long_array(env, values, BN_STATVFS_LENGTH);
}

jlongArray JNICALL bn_statvfs(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;
    jlongArray result = NULL;
    struct statvfs sv;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return NULL;
    }
    if (statvfs(path, &sv) != 0) {
        bn_throw_errno(env, "statvfs", path, errno);
    } else {
        result = to_array(env, &sv);
    }
    bn_utf_release(env, j_path, path);
    return result;
}

/* By descriptor (an O_PATH one will do: fstatfs accepts it since Linux 3.12): no path is looked up again,
 * where statvfs of /proc/self/fd/N walks procfs to the descriptor's file first. */
jlongArray JNICALL bn_fstatvfs(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    struct statvfs sv;

    if (fstatvfs(fd, &sv) != 0) {
        char shown[32];
        snprintf(shown, sizeof(shown), "descriptor %d", (int) fd);
        bn_throw_errno(env, "fstatvfs", shown, errno);
        return NULL;
    }
    return to_array(env, &sv);
}
