/*
 * Unix stream sockets as a client sees them: connect to a path (a /proc/self/fd/N magic link names an
 * opened socket file exactly), and ask who listens at the other end (SO_PEERCRED) and under which address
 * it was bound (getpeername). Nothing here decides whether that is good: the caller does.
 */
#include "blocknode.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The layout of peerCredentials()' array: LinuxNative.PEER_PID, PEER_UID, PEER_GID. */
enum bn_peer_index { BN_PEER_PID, BN_PEER_UID, BN_PEER_GID, BN_PEER_LENGTH };

jint JNICALL bn_connect_unix_socket(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;
    int fd = -1;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return -1;
    }
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof(address.sun_path)) {
        bn_throw_errno(env, "connect", path, length == 0 ? EINVAL : ENAMETOOLONG);
        goto out;
    }
    memcpy(address.sun_path, path, length + 1);
    /* Non-blocking: a listener whose backlog is full answers EAGAIN at once instead of holding us. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        bn_throw_errno(env, "socket", path, errno);
        goto out;
    }
    if (connect(fd, (const struct sockaddr *) &address, (socklen_t) sizeof(address)) != 0) {
        int saved = errno;
        close(fd);
        fd = -1;
        bn_throw_errno(env, "connect", path, saved);
    }
out:
    bn_utf_release(env, j_path, path);
    return (jint) fd;
}

jintArray JNICALL bn_peer_credentials(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt((int) fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        bn_throw_errno(env, "getsockopt(SO_PEERCRED)", NULL, errno);
        return NULL;
    }
    jint values[BN_PEER_LENGTH];
    values[BN_PEER_PID] = (jint) credentials.pid;
    values[BN_PEER_UID] = (jint) credentials.uid;
    values[BN_PEER_GID] = (jint) credentials.gid;
    jintArray array = (*env)->NewIntArray(env, BN_PEER_LENGTH);
    if (array != NULL) {
        (*env)->SetIntArrayRegion(env, array, 0, BN_PEER_LENGTH, values);
    }
    return array;
}

jbyteArray JNICALL bn_peer_address(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    struct sockaddr_un address;
    socklen_t length = sizeof(address);
    memset(&address, 0, sizeof(address));
    if (getpeername((int) fd, (struct sockaddr *) &address, &length) != 0) {
        bn_throw_errno(env, "getpeername", NULL, errno);
        return NULL;
    }
    /* sun_path as bound: unnamed (empty), abstract (a leading NUL, kept), or a path (its NUL dropped). */
    size_t offset = offsetof(struct sockaddr_un, sun_path);
    size_t bytes = length > offset ? (size_t) length - offset : 0;
    if (bytes > sizeof(address.sun_path)) {
        bytes = sizeof(address.sun_path);
    }
    if (bytes > 0 && address.sun_path[0] != '\0') {
        bytes = strnlen(address.sun_path, bytes);
    }
    jbyteArray array = (*env)->NewByteArray(env, (jsize) bytes);
    if (array != NULL) {
        (*env)->SetByteArrayRegion(env, array, 0, (jsize) bytes, (const jbyte *) address.sun_path);
    }
    return array;
}
