/*
 * A failed call -> NativeIOException, carrying the raw errno with the C library's name and text for it.
 * Which errnos a caller tells apart is Java's business (dev.blocknode.os.Errno), not this file's: C types
 * no errno beyond the names below, for C libraries that cannot name one themselves.
 */
#include "blocknode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BN_EXCEPTION_CTOR_SIG \
    "(Ljava/lang/String;Ljava/lang/String;ILjava/lang/String;Ljava/lang/String;)V"

static jclass exception_class;
static jmethodID exception_ctor;

int bn_errors_init(JNIEnv *env) {
    jclass local = (*env)->FindClass(env, BN_PACKAGE "NativeIOException");
    if (local == NULL) {
        return -1;
    }
    exception_ctor = (*env)->GetMethodID(env, local, "<init>", BN_EXCEPTION_CTOR_SIG);
    if (exception_ctor == NULL) {
        (*env)->DeleteLocalRef(env, local);
        return -1;
    }
    exception_class = (jclass) (*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    if (exception_class == NULL) {
        bn_throw_oom(env, "libblocknode: NewGlobalRef");
        return -1;
    }
    return 0;
}

void bn_errors_destroy(JNIEnv *env) {
    if (exception_class != NULL) {
        (*env)->DeleteGlobalRef(env, exception_class);
        exception_class = NULL;
    }
    exception_ctor = NULL;
}

/* "EBUSY" for EBUSY: glibc >= 2.32 knows every name; older C libraries get a table of the
 * ones this library can meet, and "E<number>" for the rest. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32)) \
    && !defined(BN_NO_STRERRORNAME_NP)
static const char *errno_name(int err, char *buf, size_t len) {
    const char *name = strerrorname_np(err);
    if (name != NULL) {
        return name;
    }
    snprintf(buf, len, "E%d", err);
    return buf;
}
#else
#define BN_ERRNO(e) { e, #e }
static const struct {
    int err;
    const char *name;
} errno_names[] = {
    BN_ERRNO(EPERM), BN_ERRNO(ENOENT), BN_ERRNO(EINTR), BN_ERRNO(EIO), BN_ERRNO(ENXIO),
    BN_ERRNO(EBADF), BN_ERRNO(EAGAIN), BN_ERRNO(ENOMEM), BN_ERRNO(EACCES), BN_ERRNO(EFAULT),
    BN_ERRNO(ENOTBLK), BN_ERRNO(EBUSY), BN_ERRNO(EEXIST), BN_ERRNO(EXDEV), BN_ERRNO(ENODEV),
    BN_ERRNO(ENOTDIR), BN_ERRNO(EISDIR), BN_ERRNO(EINVAL), BN_ERRNO(ENFILE), BN_ERRNO(EMFILE),
    BN_ERRNO(ENOTTY), BN_ERRNO(EFBIG), BN_ERRNO(ENOSPC), BN_ERRNO(EROFS), BN_ERRNO(EMLINK),
    BN_ERRNO(ERANGE), BN_ERRNO(ENAMETOOLONG), BN_ERRNO(ENOSYS), BN_ERRNO(ELOOP),
    BN_ERRNO(EOVERFLOW), BN_ERRNO(EOPNOTSUPP), BN_ERRNO(ETIMEDOUT), BN_ERRNO(ESTALE),
    BN_ERRNO(EDQUOT), BN_ERRNO(ENOMEDIUM), BN_ERRNO(EMEDIUMTYPE), BN_ERRNO(ENOTEMPTY), BN_ERRNO(EMSGSIZE),
    BN_ERRNO(ENOBUFS), BN_ERRNO(EBADE),
};
#undef BN_ERRNO

static const char *errno_name(int err, char *buf, size_t len) {
    for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++) {
        if (errno_names[i].err == err) {
            return errno_names[i].name;
        }
    }
    snprintf(buf, len, "E%d", err);
    return buf;
}
#endif

void bn_throw_errno(JNIEnv *env, const char *syscall, const char *path, int err) {
    if ((*env)->ExceptionCheck(env)) {
        return;
    }
    char name_buf[32];
    char desc_buf[256];
    const char *name = errno_name(err, name_buf, sizeof(name_buf));
    /* GNU strerror_r (_GNU_SOURCE): returns the text, in desc_buf or a static string. */
    const char *description = strerror_r(err, desc_buf, sizeof(desc_buf));

    jstring j_syscall = NULL, j_path = NULL, j_name = NULL, j_description = NULL;
    jobject throwable = NULL;
    if ((j_syscall = (*env)->NewStringUTF(env, syscall)) == NULL) {
        goto out;
    }
    if (path != NULL && (j_path = (*env)->NewStringUTF(env, path)) == NULL) {
        goto out;
    }
    if ((j_name = (*env)->NewStringUTF(env, name)) == NULL) {
        goto out;
    }
    if ((j_description = (*env)->NewStringUTF(env, description)) == NULL) {
        goto out;
    }
    throwable = (*env)->NewObject(env, exception_class, exception_ctor, j_syscall, j_path, (jint) err, j_name,
                                  j_description);
    if (throwable != NULL) {
        (*env)->Throw(env, (jthrowable) throwable);
    }
out:
    /* DeleteLocalRef is NULL-safe and allowed with an exception pending. */
    (*env)->DeleteLocalRef(env, throwable);
    (*env)->DeleteLocalRef(env, j_description);
    (*env)->DeleteLocalRef(env, j_name);
    (*env)->DeleteLocalRef(env, j_path);
    (*env)->DeleteLocalRef(env, j_syscall);
}

void bn_throw_errno_from_to(JNIEnv *env, const char *syscall, const char *source, const char *target, int err) {
    const char *shown_source = source != NULL ? source : "(null)";
    size_t length = strlen(shown_source) + strlen(" -> ") + strlen(target) + 1;
    char *path = malloc(length);
    if (path == NULL) {
        bn_throw_oom(env, "libblocknode: error message");
        return;
    }
    snprintf(path, length, "%s -> %s", shown_source, target);
    bn_throw_errno(env, syscall, path, err);
    free(path);
}

static void throw_by_name(JNIEnv *env, const char *class_name, const char *message) {
    if ((*env)->ExceptionCheck(env)) {
        return;
    }
    jclass cls = (*env)->FindClass(env, class_name);
    if (cls != NULL) {
        (*env)->ThrowNew(env, cls, message);
        (*env)->DeleteLocalRef(env, cls);
    }
}

void bn_throw_npe(JNIEnv *env, const char *message) {
    throw_by_name(env, "java/lang/NullPointerException", message);
}

void bn_throw_oom(JNIEnv *env, const char *message) {
    throw_by_name(env, "java/lang/OutOfMemoryError", message);
}

void bn_throw_link_error(JNIEnv *env, const char *message) {
    throw_by_name(env, "java/lang/UnsatisfiedLinkError", message);
}
