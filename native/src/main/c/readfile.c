/*
 * Reading a small file the plugin keeps (its staging records) without trusting what the name is now:
 * open it never following a final symlink and never waiting (a FIFO without a writer opens at once),
 * then read it by descriptor. What was opened is checked by Java (statAt(fd, "") is an fstat), before
 * any read; no policy here.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* O_NOFOLLOW: a symlink named like the file is ELOOP, never followed (to /dev/zero, or anywhere).
 * O_NONBLOCK: open never waits, for a FIFO's writer or a device. O_NOCTTY: a terminal named like the
 * file never becomes the plugin's controlling terminal. */
jint JNICALL bn_open_for_reading(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        bn_throw_errno(env, "open", path, errno);
    }
    bn_utf_release(env, j_path, path);
    return (jint) fd;
}

/* read(2) into buffer[offset, offset + length); 0 at the end of the file. EINTR is retried. */
jint JNICALL bn_read_fd(JNIEnv *env, jclass clazz, jint fd, jbyteArray j_buffer, jint offset, jint length) {
    (void) clazz;
    if (j_buffer == NULL) {
        bn_throw_npe(env, "buffer must not be null");
        return -1;
    }
    jsize size = (*env)->GetArrayLength(env, j_buffer);
    if (offset < 0 || length < 0 || offset > size || length > size - offset) {
        bn_throw_errno(env, "read", NULL, EINVAL);
        return -1;
    }
    jbyte *buffer = (*env)->GetByteArrayElements(env, j_buffer, NULL);
    if (buffer == NULL) {
        return -1; /* OutOfMemoryError pending */
    }
    ssize_t n;
    do {
        n = read((int) fd, buffer + offset, (size_t) length);
    } while (n < 0 && errno == EINTR);
    int err = errno;
    /* Copy back what was read (mode 0); on failure nothing was, so abort without copying. */
    (*env)->ReleaseByteArrayElements(env, j_buffer, buffer, n > 0 ? 0 : JNI_ABORT);
    if (n < 0) {
        bn_throw_errno(env, "read", NULL, err);
        return -1;
    }
    return (jint) n;
}
