/*
 * A bind mount that carries its flags from the instant it is attached: open_tree(OPEN_TREE_CLONE) makes a
 * detached copy of the source's mount, mount_setattr sets the flags on that copy while nothing can see it,
 * move_mount attaches it at the target. Why: where the target lies in a shared mount (the kubelet root,
 * mounted Bidirectional in the plugin's container), the kernel copies a new mount to every peer and slave
 * with the flags it has when it is attached, and never passes on a later remount. A bind made and then
 * remounted read-only stays writable in the host's mount namespace.
 *
 * Not recursive (no AT_RECURSIVE), like mount(2) with MS_BIND alone. The syscalls are made through
 * syscall(2), not glibc's wrappers: those appeared in glibc 2.36 and would make the library refuse to load
 * on an older C library; a kernel without them answers ENOSYS, which the caller takes as "use mount(2)".
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The three steps; 0, or -1 with errno set and *failed naming the syscall that failed. */
static int bind_with_attributes(const char *source, const char *target, unsigned long long attr_set,
                                unsigned long long attr_clr, const char **failed) {
    /* The source's final symlink is followed, as mount(2) follows it: /proc/self/fd/N names the opened file. */
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0) {
        *failed = "open_tree";
        return -1;
    }
    struct mount_attr attr = {
        .attr_set = attr_set,
        .attr_clr = attr_clr,
    };
    if ((attr_set | attr_clr) != 0
        && syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
        *failed = "mount_setattr";
        goto fail;
    }
    /* MOVE_MOUNT_T_SYMLINKS: the target is /proc/self/fd/N, a magic link to the opened target; mount(2)
     * follows it too. Without it move_mount would try to mount onto the link itself. */
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS)
        != 0) {
        *failed = "move_mount";
        goto fail;
    }
    close(tree); /* the tree is attached now: closing the descriptor no longer dissolves it */
    return 0;
fail:;
    int saved = errno;
    close(tree); /* a detached tree is dissolved when its last descriptor closes: nothing is left mounted */
    errno = saved;
    return -1;
}

void JNICALL bn_bind_with_attributes(JNIEnv *env, jclass clazz, jstring j_source, jstring j_target,
                                     jlong attr_set, jlong attr_clear) {
    (void) clazz;
    const char *source = NULL, *target = NULL;
    const char *failed = NULL;

    if (bn_utf_get(env, j_source, "source", 0, &source) != 0
        || bn_utf_get(env, j_target, "target", 0, &target) != 0) {
        goto out;
    }
    if (bind_with_attributes(source, target, (unsigned long long) attr_set, (unsigned long long) attr_clear,
                             &failed) != 0) {
        bn_throw_errno_from_to(env, failed, source, target, errno);
    }
out:
    bn_utf_release(env, j_target, target);
    bn_utf_release(env, j_source, source);
}
