/*
 * statx(2) of a path without following its final symlink: stat() and isMountPoint().
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Never trigger an automount just by looking. */
#define BN_STATX_FLAGS (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)

/* The parent of path, newly allocated: path + "/.." for a directory, else its dirname. */
static char *parent_of(const char *path, int is_directory) {
    size_t length = strlen(path);
    char *parent;
    if (is_directory) {
        parent = malloc(length + sizeof("/.."));
        if (parent != NULL) {
            memcpy(parent, path, length);
            memcpy(parent + length, "/..", sizeof("/.."));
        }
        return parent;
    }
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        return strdup(".");
    }
    if (slash == path) {
        return strdup("/");
    }
    return strndup(path, (size_t) (slash - path));
}

jboolean JNICALL bn_is_mount_point(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;
    char *parent = NULL;
    jboolean result = JNI_FALSE;
    struct statx self, up;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return JNI_FALSE;
    }
    if (statx(AT_FDCWD, path, BN_STATX_FLAGS, STATX_BASIC_STATS, &self) != 0) {
        bn_throw_errno(env, "statx", path, errno);
        goto out;
    }
    if (self.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) {
        /* Linux >= 5.8 says so directly; this also covers a file or device node bind-mounted
         * within one file system, which no st_dev comparison can see. */
        result = (self.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? JNI_TRUE : JNI_FALSE;
        goto out;
    }
    parent = parent_of(path, S_ISDIR(self.stx_mode));
    if (parent == NULL) {
        bn_throw_oom(env, "libblocknode: isMountPoint parent path");
        goto out;
    }
    if (statx(AT_FDCWD, parent, AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &up) != 0) {
        bn_throw_errno(env, "statx", parent, errno);
    } else {
        /* A different device than the parent's, or its own parent ("/"). */
        result = (self.stx_dev_major != up.stx_dev_major || self.stx_dev_minor != up.stx_dev_minor
                  || self.stx_ino == up.stx_ino)
                     ? JNI_TRUE
                     : JNI_FALSE;
    }
out:
    free(parent);
    bn_utf_release(env, j_path, path);
    return result;
}

jlongArray bn_stat_array(JNIEnv *env, const struct statx *stx) {
    jlong values[BN_STAT_LENGTH];
    values[BN_STAT_DEV_MAJOR] = (jlong) stx->stx_dev_major;
    values[BN_STAT_DEV_MINOR] = (jlong) stx->stx_dev_minor;
    values[BN_STAT_RDEV_MAJOR] = (jlong) stx->stx_rdev_major;
    values[BN_STAT_RDEV_MINOR] = (jlong) stx->stx_rdev_minor;
    values[BN_STAT_MODE] = (jlong) stx->stx_mode;
    values[BN_STAT_MOUNT_ROOT] = (stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
                                     ? ((stx->stx_attributes & STATX_ATTR_MOUNT_ROOT) ? 1 : 0)
                                     : -1;
    values[BN_STAT_INODE] = (jlong) stx->stx_ino;
    return bn_new_long_array(env, values, BN_STAT_LENGTH);
}

jlongArray JNICALL bn_stat(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;
    jlongArray result = NULL;
    struct statx stx;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return NULL;
    }
    if (statx(AT_FDCWD, path, BN_STATX_FLAGS, STATX_BASIC_STATS, &stx) != 0) {
        bn_throw_errno(env, "statx", path, errno);
    } else {
        result = bn_stat_array(env, &stx);
    }
    bn_utf_release(env, j_path, path);
    return result;
}
