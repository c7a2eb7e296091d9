/*
 * Device-mapper ioctls on the control node (/dev/mapper/control), by map name: a target message, the open
 * count, and a remove. What dmsetup and multipath -f send, without a process each (seconds apiece on a loaded
 * node). No udev cookie is passed: udev still gets the kernel's uevents and drops the /dev/mapper link.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/dm-ioctl.h>

#define BN_DM_MESSAGE_MAX 256

/* The header and what follows it: a target message (struct dm_target_msg, whose text runs on), or room for
 * what the kernel answers. */
struct bn_dm_buffer {
    struct dm_ioctl header;
    union {
        struct dm_target_msg message;
        char bytes[sizeof(struct dm_target_msg) + BN_DM_MESSAGE_MAX];
    } data;
};

/* One ioctl on the control node for the map `name`; fills *buffer's header (and message when not NULL).
 * Returns 0, or -1 with an exception pending naming the request and the map. */
static int dm_call(JNIEnv *env, jstring j_control, jstring j_name, unsigned long request, const char *request_name,
                   const char *message, struct bn_dm_buffer *buffer) {
    const char *control = NULL;
    const char *name = NULL;
    int result = -1;
    int fd = -1;
    if (bn_utf_get(env, j_control, "control", 0, &control) != 0) {
        return -1;
    }
    if (bn_utf_get(env, j_name, "name", 0, &name) != 0) {
        bn_utf_release(env, j_control, control);
        return -1;
    }
    memset(buffer, 0, sizeof(*buffer));
    /* Version 4.0.0 asks for no feature newer than these three calls: the kernel refuses (EINVAL) a minor
     * above its own, so the header's DM_VERSION_MINOR would fail on a kernel older than these headers. */
    buffer->header.version[0] = DM_VERSION_MAJOR;
    buffer->header.data_size = sizeof(*buffer);
    buffer->header.data_start = sizeof(struct dm_ioctl);
    if (strlen(name) >= sizeof(buffer->header.name)
        || (message != NULL && strlen(message) >= BN_DM_MESSAGE_MAX)) {
        bn_throw_errno(env, request_name, name, EINVAL);
        goto done;
    }
    strcpy(buffer->header.name, name);
    if (message != NULL) {
        buffer->data.message.sector = 0;
        strcpy(buffer->data.bytes + offsetof(struct dm_target_msg, message), message);
    }
    fd = open(control, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        bn_throw_errno(env, "open", control, errno);
        goto done;
    }
    if (ioctl(fd, request, buffer) != 0) {
        bn_throw_errno(env, request_name, name, errno);
    } else {
        result = 0;
    }
    close(fd);
done:
    bn_utf_release(env, j_name, name);
    bn_utf_release(env, j_control, control);
    return result;
}

void JNICALL bn_dm_target_message(JNIEnv *env, jclass clazz, jstring j_control, jstring j_name, jstring j_message) {
    (void) clazz;
    const char *message = NULL;
    if (bn_utf_get(env, j_message, "message", 0, &message) != 0) {
        return;
    }
    struct bn_dm_buffer buffer;
    dm_call(env, j_control, j_name, DM_TARGET_MSG, "ioctl(DM_TARGET_MSG)", message, &buffer);
    bn_utf_release(env, j_message, message);
}

jint JNICALL bn_dm_open_count(JNIEnv *env, jclass clazz, jstring j_control, jstring j_name) {
    (void) clazz;
    struct bn_dm_buffer buffer;
    if (dm_call(env, j_control, j_name, DM_DEV_STATUS, "ioctl(DM_DEV_STATUS)", NULL, &buffer) != 0) {
        return -1;
    }
    return (jint) buffer.header.open_count;
}

void JNICALL bn_dm_remove(JNIEnv *env, jclass clazz, jstring j_control, jstring j_name) {
    (void) clazz;
    struct bn_dm_buffer buffer;
    dm_call(env, j_control, j_name, DM_DEV_REMOVE, "ioctl(DM_DEV_REMOVE)", NULL, &buffer);
}
