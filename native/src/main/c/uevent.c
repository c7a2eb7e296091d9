/*
 * Kernel uevents (NETLINK_KOBJECT_UEVENT): a socket bound to the kernel's multicast group, a receive
 * that waits at most a given time (so a Java thread can keep a deadline and be stopped), and close.
 * Only datagrams sent by the kernel itself (port id 0) are passed on: udevd rebroadcasts on another
 * group, but any local process may send a datagram straight to our port, and such a message must not
 * be taken for the kernel's word.
 */
#include "blocknode.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

/* The kernel's uevent group; udevd's rebroadcast is group 2, which we do not join. */
#define BN_UEVENT_KERNEL_GROUP 1u
/* The kernel caps a uevent's environment at 2048 bytes (UEVENT_BUFFER_SIZE) after "action@devpath";
 * devpaths are far shorter than the rest. A larger message is reported as EMSGSIZE, never cut. */
#define BN_UEVENT_BUFFER 8192

jint JNICALL bn_uevent_open(JNIEnv *env, jclass clazz, jint receive_buffer_bytes) {
    (void) clazz;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) {
        bn_throw_errno(env, "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", NULL, errno);
        return -1;
    }
    if (receive_buffer_bytes > 0) {
        /* A burst (a rescan of many LUNs) must not overflow the socket while Java is slow to read.
         * SO_RCVBUFFORCE passes the rmem_max limit but needs CAP_NET_ADMIN; else take what is allowed. */
        int size = (int) receive_buffer_bytes;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0
            && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) != 0) {
            int err = errno;
            close(fd);
            bn_throw_errno(env, "setsockopt(SO_RCVBUF)", NULL, err);
            return -1;
        }
    }
    struct sockaddr_nl address;
    memset(&address, 0, sizeof(address));
    address.nl_family = AF_NETLINK;
    address.nl_pid = 0; /* the kernel picks our port id */
    address.nl_groups = BN_UEVENT_KERNEL_GROUP;
    if (bind(fd, (struct sockaddr *) &address, sizeof(address)) != 0) {
        int err = errno;
        close(fd);
        bn_throw_errno(env, "bind(NETLINK_KOBJECT_UEVENT)", NULL, err);
        return -1;
    }
    return (jint) fd;
}

/* A kernel uevent starts with "action@devpath" and a NUL. */
static int looks_like_uevent(const char *message, size_t length) {
    const char *end = memchr(message, '\0', length);
    size_t header = end == NULL ? length : (size_t) (end - message);
    const char *at = memchr(message, '@', header);
    return at != NULL && at != message && at + 1 < message + header;
}

jbyteArray JNICALL bn_uevent_receive(JNIEnv *env, jclass clazz, jint fd, jint timeout_millis) {
    (void) clazz;
    if (fd < 0) {
        /* poll(2) would skip a negative descriptor and report a timeout */
        bn_throw_errno(env, "poll", NULL, EBADF);
        return NULL;
    }
    if (timeout_millis < 0) {
        bn_throw_errno(env, "poll", NULL, EINVAL);
        return NULL;
    }
    struct pollfd wait_for = { .fd = fd, .events = POLLIN, .revents = 0 };
    int ready = poll(&wait_for, 1, (int) timeout_millis);
    if (ready < 0) {
        if (errno == EINTR) {
            return NULL; /* a signal is no event: the caller's loop asks again */
        }
        bn_throw_errno(env, "poll", NULL, errno);
        return NULL;
    }
    if (ready == 0) {
        return NULL;
    }
    if (wait_for.revents & POLLNVAL) {
        bn_throw_errno(env, "poll", NULL, EBADF);
        return NULL;
    }

    char buffer[BN_UEVENT_BUFFER];
    struct sockaddr_nl sender;
    memset(&sender, 0, sizeof(sender));
    struct iovec part = { .iov_base = buffer, .iov_len = sizeof(buffer) };
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_name = &sender;
    message.msg_namelen = sizeof(sender);
    message.msg_iov = &part;
    message.msg_iovlen = 1;

    /* POLLERR as well as POLLIN lands here: recvmsg then reports the error (ENOBUFS: events lost). */
    ssize_t length = recvmsg((int) fd, &message, MSG_DONTWAIT);
    if (length < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            return NULL;
        }
        bn_throw_errno(env, "recvmsg(NETLINK_KOBJECT_UEVENT)", NULL, errno);
        return NULL;
    }
    if (message.msg_flags & MSG_TRUNC) {
        bn_throw_errno(env, "recvmsg(NETLINK_KOBJECT_UEVENT)", NULL, EMSGSIZE);
        return NULL;
    }
    /* Not from the kernel, or not shaped like a uevent: dropped, reported as an empty message. */
    jsize kept = 0;
    if (message.msg_namelen == sizeof(sender) && sender.nl_family == AF_NETLINK && sender.nl_pid == 0
        && length > 0 && looks_like_uevent(buffer, (size_t) length)) {
        kept = (jsize) length;
    }
    jbyteArray result = (*env)->NewByteArray(env, kept);
    if (result == NULL) {
        return NULL; /* OutOfMemoryError pending */
    }
    if (kept > 0) {
        (*env)->SetByteArrayRegion(env, result, 0, kept, (const jbyte *) buffer);
        if ((*env)->ExceptionCheck(env)) {
            (*env)->DeleteLocalRef(env, result);
            return NULL;
        }
    }
    return result;
}

void JNICALL bn_close_fd(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    /* Linux frees the descriptor even when close fails with EINTR: never retry. */
    if (close((int) fd) != 0 && errno != EINTR) {
        bn_throw_errno(env, "close", NULL, errno);
    }
}
