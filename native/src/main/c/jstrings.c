/*
 * Java <-> C values: String arguments in, long[] results out.
 */
#include "blocknode.h"

#include <stdio.h>

int bn_utf_get(JNIEnv *env, jstring s, const char *name, int nullable, const char **out) {
    *out = NULL;
    if (s == NULL) {
        if (nullable) {
            return 0;
        }
        char message[64];
        snprintf(message, sizeof(message), "%s must not be null", name);
        bn_throw_npe(env, message);
        return -1;
    }
    *out = (*env)->GetStringUTFChars(env, s, NULL);
    /* NULL means OutOfMemoryError is pending. */
    return *out == NULL ? -1 : 0;
}

void bn_utf_release(JNIEnv *env, jstring s, const char *chars) {
    if (chars != NULL) {
        (*env)->ReleaseStringUTFChars(env, s, chars);
    }
}

jlongArray bn_new_long_array(JNIEnv *env, const jlong *values, jsize length) {
    jlongArray array = (*env)->NewLongArray(env, length);
    if (array == NULL) {
        return NULL;
    }
    (*env)->SetLongArrayRegion(env, array, 0, length, values);
    if ((*env)->ExceptionCheck(env)) {
        (*env)->DeleteLocalRef(env, array);
        return NULL;
    }
    return array;
}
