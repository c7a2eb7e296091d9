/*
 * Paths used by descriptor: a path named by a request is resolved once, beneath a directory the plugin
 * opened itself (the kubelet root), and from then on only the descriptor is used. Nothing is looked up by
 * name twice, so a symlink swapped into the path between a check and a use cannot redirect the use.
 *
 * openBeneath() resolves with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where
 * the kernel has it (5.6+), and otherwise walks one component at a time with openat(O_NOFOLLOW) from the
 * directory's descriptor, as kubelet's safe subPath open does. Both refuse every symlink on the way
 * (ELOOP) and every escape (EXDEV, or a "." / ".." element: EXDEV too); the final element itself is
 * opened, never followed (a symlink there comes back as a descriptor of the link, for the caller to refuse).
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The options of openBeneath(), as LinuxNative declares them (checked at load by constants.c). */
#define BN_OPEN_CREATE_DIRECTORIES 1
#define BN_OPEN_WALK 2
#define BN_OPEN_DIRECTORY 4

/* Directories the plugin creates on the way (a publish target, a staging directory): kubelet's own mode. */
#define BN_DIRECTORY_MODE 0750

#define BN_PATH_FLAGS (O_PATH | O_NOFOLLOW | O_CLOEXEC)

static int is_dot_or_dotdot(const char *name) {
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Whether a "." or ".." element is anywhere in path: refused by both resolutions alike, never interpreted. */
static int has_dot_element(const char *path) {
    for (const char *element = path; *element != '\0';) {
        size_t length = strcspn(element, "/");
        if ((length == 1 && element[0] == '.') || (length == 2 && element[0] == '.' && element[1] == '.')) {
            return 1;
        }
        element += length;
        element += strspn(element, "/");
    }
    return 0;
}

/* openat2 beneath dir_fd; -1 with errno set. ENOSYS where the kernel has no openat2. */
static int open_with_openat2(int dir_fd, const char *relative) {
    struct open_how how = {
        .flags = BN_PATH_FLAGS,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int) syscall(SYS_openat2, dir_fd, relative, &how, sizeof(how));
}

/* fd itself when it is a directory; else closes it and fails: ELOOP for a symlink, ENOTDIR for the rest. */
static int require_directory(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        return -1;
    }
    return fd;
}

/* One element opened beneath the directory at, not followed, created as a directory if asked and absent. */
static int open_element(int at, const char *name, int must_be_directory, int create) {
    int fd = openat(at, name, BN_PATH_FLAGS);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(at, name, BN_DIRECTORY_MODE) != 0 && errno != EEXIST) {
            return -1;
        }
        fd = openat(at, name, BN_PATH_FLAGS);
    }
    return fd < 0 || !must_be_directory ? fd : require_directory(fd);
}

/* The component walk: every element opened from its parent's descriptor, none followed. */
static int open_by_walk(int dir_fd, const char *relative, int create, int last_is_directory) {
    char *copy = strdup(relative);
    if (copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int current = dir_fd; /* the directory the next element is opened in; ours to close unless dir_fd */
    int result = -1;
    char *saveptr = NULL;
    char *name = strtok_r(copy, "/", &saveptr);
    if (name == NULL) {
        errno = EINVAL; /* an empty path names nothing beneath the directory */
    }
    while (name != NULL) {
        char *next = strtok_r(NULL, "/", &saveptr);
        if (is_dot_or_dotdot(name)) {
            errno = EXDEV;
            break;
        }
        int fd = open_element(current, name, next != NULL || create || last_is_directory, create);
        if (fd < 0) {
            break;
        }
        if (current != dir_fd) {
            close(current);
        }
        current = fd;
        if (next == NULL) {
            result = fd;
            current = dir_fd; /* handed to the caller */
        }
        name = next;
    }
    if (current != dir_fd) {
        int saved = errno;
        close(current);
        errno = saved;
    }
    free(copy);
    return result;
}

jint JNICALL bn_open_beneath(JNIEnv *env, jclass clazz, jint dir_fd, jstring j_relative, jint options) {
    (void) clazz;
    const char *relative = NULL;
    int fd = -1;

    if (bn_utf_get(env, j_relative, "relative", 0, &relative) != 0) {
        return -1;
    }
    if (relative[0] == '/' || has_dot_element(relative)) {
        bn_throw_errno(env, "openBeneath", relative, EXDEV); /* an absolute path or ".." leaves the directory */
        goto out;
    }
    int create = (options & BN_OPEN_CREATE_DIRECTORIES) != 0;
    int directory = (options & BN_OPEN_DIRECTORY) != 0;
    if (!create && !(options & BN_OPEN_WALK)) {
        fd = open_with_openat2((int) dir_fd, relative);
        if (fd >= 0 && directory) {
            fd = require_directory(fd);
        }
        if (fd >= 0 || errno != ENOSYS) {
            goto done;
        }
    }
    /* Creating, asked to walk, or a kernel before openat2: one element at a time. */
    fd = open_by_walk((int) dir_fd, relative, create, directory);
done:
    if (fd < 0) {
        bn_throw_errno(env, "openBeneath", relative, errno);
    }
out:
    bn_utf_release(env, j_relative, relative);
    return (jint) fd;
}

jint JNICALL bn_open_directory(JNIEnv *env, jclass clazz, jstring j_path) {
    (void) clazz;
    const char *path = NULL;

    if (bn_utf_get(env, j_path, "path", 0, &path) != 0) {
        return -1;
    }
    int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        bn_throw_errno(env, "open", path, errno);
    }
    bn_utf_release(env, j_path, path);
    return (jint) fd;
}

jlongArray JNICALL bn_stat_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring j_name) {
    (void) clazz;
    const char *name = NULL;
    jlongArray result = NULL;
    struct statx stx;

    if (bn_utf_get(env, j_name, "name", 0, &name) != 0) {
        return NULL;
    }
    int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
    if (strchr(name, '/') != NULL || is_dot_or_dotdot(name)) {
        bn_throw_errno(env, "statx", name, EXDEV); /* one element of dir_fd, never a path */
    } else if (statx((int) dir_fd, name, flags, STATX_BASIC_STATS, &stx) == 0) {
        result = bn_stat_array(env, &stx);
    } else if (errno != ENOENT) {
        bn_throw_errno(env, "statx", name, errno);
    }
    bn_utf_release(env, j_name, name);
    return result;
}

jboolean JNICALL bn_create_file_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring j_name) {
    (void) clazz;
    const char *name = NULL;
    jboolean created = JNI_FALSE;

    if (bn_utf_get(env, j_name, "name", 0, &name) != 0) {
        return JNI_FALSE;
    }
    if (strchr(name, '/') != NULL || is_dot_or_dotdot(name) || name[0] == '\0') {
        bn_throw_errno(env, "openat", name, EXDEV);
        goto out;
    }
    /* O_EXCL | O_NOFOLLOW: never opens, let alone creates through, whatever is already there. */
    int fd = openat((int) dir_fd, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0640);
    if (fd >= 0) {
        close(fd);
        created = JNI_TRUE;
    } else if (errno != EEXIST) {
        bn_throw_errno(env, "openat", name, errno);
    }
out:
    bn_utf_release(env, j_name, name);
    return created;
}

void JNICALL bn_unlink_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring j_name, jboolean directory) {
    (void) clazz;
    const char *name = NULL;

    if (bn_utf_get(env, j_name, "name", 0, &name) != 0) {
        return;
    }
    if (strchr(name, '/') != NULL || is_dot_or_dotdot(name) || name[0] == '\0') {
        bn_throw_errno(env, "unlinkat", name, EXDEV);
    } else if (unlinkat((int) dir_fd, name, directory ? AT_REMOVEDIR : 0) != 0) {
        bn_throw_errno(env, "unlinkat", name, errno);
    }
    bn_utf_release(env, j_name, name);
}
