/*
 * fsync(2) by path: open O_RDONLY (which works for directories too), fsync, close.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

void JNICALL bn_fsync(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        bn_throw_errno(env, "open", path, errno);
    } else {
        if (fsync(fd) != 0) {
            bn_throw_errno(env, "fsync", path, errno);
        }
        if (close(fd) != 0 && errno != EINTR) {
            bn_throw_errno(env, "close", path, errno); /* no-op if already throwing */
        }
    }
    bn_utf_release(env, j_path, path);
}
