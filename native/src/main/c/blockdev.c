/*
 * Block device ioctls: size, logical sector size, buffer flush; and the exclusive-open probe.
 * Each opens the device O_RDONLY|O_CLOEXEC and closes it again on every path.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fs.h>

/* The shape the calls below share: the path from Java, opened O_RDONLY|O_CLOEXEC. Returns the descriptor, or -1
 * with a Java exception pending and nothing left to release; otherwise the caller closes the descriptor and
 * releases *device_path. */
static int device_open(JNIEnv *env, jstring j_device_path, const char **device_path) {
    if (bn_utf_get(env, j_device_path, "devicePath", 0, device_path) != 0) {
        return -1;
    }
    int fd = open(*device_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        bn_throw_errno(env, "open", *device_path, errno);
        bn_utf_release(env, j_device_path, *device_path);
        return -1;
    }
    return fd;
}

/* One reading ioctl on the device: fills *arg, or throws naming the request. */
static void device_read_ioctl(JNIEnv *env, jstring j_device_path, unsigned long request, const char *request_name,
                              void *arg) {
    const char *device_path = NULL;
    int fd = device_open(env, j_device_path, &device_path);
    if (fd < 0) {
        return;
    }
    if (ioctl(fd, request, arg) != 0) {
        bn_throw_errno(env, request_name, device_path, errno);
    }
    close(fd); /* read-only descriptor: nothing to report */
    bn_utf_release(env, j_device_path, device_path);
}

jlong JNICALL bn_block_device_size(JNIEnv *env, jclass clazz, jstring j_device_path) {
    (void) clazz;
    uint64_t size = 0;
    device_read_ioctl(env, j_device_path, BLKGETSIZE64, "ioctl(BLKGETSIZE64)", &size);
    return (jlong) size;
}

jint JNICALL bn_block_sector_size(JNIEnv *env, jclass clazz, jstring j_device_path) {
    (void) clazz;
    int sector_size = 0;
    device_read_ioctl(env, j_device_path, BLKSSZGET, "ioctl(BLKSSZGET)", &sector_size);
    return (jint) sector_size;
}

void JNICALL bn_flush_block_buffers(JNIEnv *env, jclass clazz, jstring j_device_path) {
    (void) clazz;
    const char *device_path = NULL;
    int fd = device_open(env, j_device_path, &device_path);
    if (fd < 0) {
        return;
    }
    /* Write back dirty pages first, then drop the clean buffer cache. */
    if (fsync(fd) != 0) {
        bn_throw_errno(env, "fsync", device_path, errno);
    } else if (ioctl(fd, BLKFLSBUF, 0) != 0) {
        bn_throw_errno(env, "ioctl(BLKFLSBUF)", device_path, errno);
    }
    if (close(fd) != 0 && errno != EINTR) {
        bn_throw_errno(env, "close", device_path, errno); /* no-op if already throwing */
    }
    bn_utf_release(env, j_device_path, device_path);
}

/* open(2) with O_EXCL on a block device fails with EBUSY while anything holds the device exclusively:
 * a mounted filesystem, a device-mapper map or md array built on it, swap. true = in use. */
jboolean JNICALL bn_is_block_device_claimed(JNIEnv *env, jclass clazz, jstring j_device_path) {
    (void) clazz;
    const char *device_path = NULL;
    jboolean claimed = JNI_FALSE;

    if (bn_utf_get(env, j_device_path, "devicePath", 0, &device_path) != 0) {
        return JNI_FALSE;
    }
    int fd = open(device_path, O_RDONLY | O_EXCL | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    } else if (errno == EBUSY) {
        claimed = JNI_TRUE;
    } else {
        bn_throw_errno(env, "open(O_EXCL)", device_path, errno);
    }
    bn_utf_release(env, j_device_path, device_path);
    return claimed;
}
