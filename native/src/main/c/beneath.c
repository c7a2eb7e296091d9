/*
 * statx(2) of a path that the kernel resolves beneath a root directory (openat2 with RESOLVE_BENEATH):
 * statBeneath(). One syscall proves that no symlink or ".." on the way leaves the root, where a realpath
 * walk takes one lstat per element and is only as good as the moment it ran.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * absent_is_null: a path that is not there (ENOENT, ENOTDIR from openat2) returns NULL with no exception
 * pending, for callers to whom absence is an ordinary answer (a target kubelet has not created yet): a
 * thrown exception costs a stack walk and a message on every NodePublishVolume.
 */
static jlongArray stat_beneath(JNIEnv *env, jstring j_root, jstring j_relative, int absent_is_null) {
    const char *root = NULL;
    const char *relative = NULL;
    jlongArray result = NULL;
    int root_fd = -1;
    int fd = -1;
    struct statx stx;

    if (bn_utf_get(env, j_root, "root", 0, &root) != 0) {
        return NULL;
    }
    if (bn_utf_get(env, j_relative, "relative", 0, &relative) != 0) {
        goto out;
    }
    root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        bn_throw_errno(env, "open", root, errno);
        goto out;
    }
    /* O_PATH | O_NOFOLLOW: the final element itself, even a symlink, is opened, never followed. */
    struct open_how how = {
        .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    fd = (int) syscall(SYS_openat2, root_fd, relative, &how, sizeof(how));
    if (fd < 0) {
        if (!absent_is_null || (errno != ENOENT && errno != ENOTDIR)) {
            bn_throw_errno(env, "openat2", relative, errno);
        }
        goto out;
    }
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &stx) != 0) {
        bn_throw_errno(env, "statx", relative, errno);
        goto out;
    }
    result = bn_stat_array(env, &stx);
out:
    if (fd >= 0) {
        close(fd);
    }
    if (root_fd >= 0) {
        close(root_fd);
    }
    bn_utf_release(env, j_relative, relative);
    bn_utf_release(env, j_root, root);
    return result;
}

jlongArray JNICALL bn_stat_beneath(JNIEnv *env, jclass clazz, jstring j_root, jstring j_relative) {
    (void) clazz;
    return stat_beneath(env, j_root, j_relative, 0);
}

jlongArray JNICALL bn_stat_beneath_if_present(JNIEnv *env, jclass clazz, jstring j_root, jstring j_relative) {
    (void) clazz;
    return stat_beneath(env, j_root, j_relative, 1);
}
