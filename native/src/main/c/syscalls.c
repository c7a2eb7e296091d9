/*
 * Whether the kernel has a syscall the plugin relies on, asked of the kernel itself: the syscall is made with a
 * size argument of 0, which every kernel that has it refuses with EINVAL before it looks at anything else, so
 * nothing is opened or changed. ENOSYS means it is missing (an old kernel, or a seccomp filter that answers
 * ENOSYS, which the plugin would meet too). Why not the kernel's version: distributions backport, filters hide.
 */
#include "blocknode.h"

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

static jboolean answered(long result) {
    return (jboolean) (result >= 0 || errno != ENOSYS);
}

jboolean JNICALL bn_kernel_has_openat2(JNIEnv *env, jclass clazz) {
    (void) env;
    (void) clazz;
    /* openat2(dirfd, path, how, size): a size below OPEN_HOW_SIZE_VER0 is EINVAL. */
    return answered(syscall(SYS_openat2, -1, "", NULL, (size_t) 0));
}

jboolean JNICALL bn_kernel_has_mount_setattr(JNIEnv *env, jclass clazz) {
    (void) env;
    (void) clazz;
    /* mount_setattr(dirfd, path, flags, attr, size): a size below MOUNT_ATTR_SIZE_VER0 is EINVAL. */
    return answered(syscall(SYS_mount_setattr, -1, "", 0u, NULL, (size_t) 0));
}
