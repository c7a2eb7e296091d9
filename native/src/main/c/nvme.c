/*
 * NVMe passthrough: one I/O command (NVME_IOCTL_IO_CMD) sent to the namespace behind a block device, on a
 * descriptor Java opened first (bn_open_block_device) and checked the identity of by its device number; and
 * the namespace's ID (NVME_IOCTL_ID) to address it. No policy: the opcode, the command dwords 10-15, the data
 * and the timeout come from Java; the completion's status field and its dword 0 go back as numbers, and Java
 * decodes them. NVMe reservations (fencing) go through here: the block layer's IOC_PR_* ioctls have no way
 * to read the registrants before Linux 6.19, and a refusal would come back as a bare errno.
 */
#include "blocknode.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/nvme_ioctl.h>

#define BN_NVME_DWORDS 6 /* command dwords 10 to 15 */

jint JNICALL bn_nvme_namespace_id(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    char shown[32];
    int nsid = ioctl((int) fd, NVME_IOCTL_ID);
    if (nsid < 0) {
        snprintf(shown, sizeof(shown), "descriptor %d", (int) fd);
        bn_throw_errno(env, "ioctl(NVME_IOCTL_ID)", shown, errno);
        return -1;
    }
    return (jint) nsid;
}

/* The data's direction is the opcode's (bits 1:0: 01b host to controller, 10b controller to host), as the
 * kernel reads it; a buffer received is copied back into j_data. */
jintArray JNICALL bn_nvme_io_command(JNIEnv *env, jclass clazz, jint fd, jint opcode, jint nsid,
                                     jintArray j_dwords, jbyteArray j_data, jint timeout_millis) {
    (void) clazz;
    char shown[32];
    jintArray result = NULL;
    jint dwords[BN_NVME_DWORDS];
    jbyte *data = NULL;
    struct nvme_passthru_cmd cmd;

    if (j_dwords == NULL) {
        bn_throw_npe(env, "dwords must not be null");
        return NULL;
    }
    jsize data_length = j_data == NULL ? 0 : (*env)->GetArrayLength(env, j_data);
    if ((*env)->GetArrayLength(env, j_dwords) != BN_NVME_DWORDS || opcode < 0 || opcode > 0xff
        || timeout_millis <= 0) {
        bn_throw_errno(env, "NVME_IOCTL_IO_CMD", "(arguments)", EINVAL);
        return NULL;
    }
    snprintf(shown, sizeof(shown), "descriptor %d", (int) fd);
    (*env)->GetIntArrayRegion(env, j_dwords, 0, BN_NVME_DWORDS, dwords);
    if (data_length > 0) {
        data = (*env)->GetByteArrayElements(env, j_data, NULL);
        if (data == NULL) {
            return NULL; /* OutOfMemoryError pending */
        }
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = (__u8) opcode;
    cmd.nsid = (__u32) nsid;
    cmd.addr = (__u64) (uintptr_t) data;
    cmd.data_len = (__u32) data_length;
    cmd.cdw10 = (__u32) dwords[0];
    cmd.cdw11 = (__u32) dwords[1];
    cmd.cdw12 = (__u32) dwords[2];
    cmd.cdw13 = (__u32) dwords[3];
    cmd.cdw14 = (__u32) dwords[4];
    cmd.cdw15 = (__u32) dwords[5];
    cmd.timeout_ms = (__u32) timeout_millis;

    /* >= 0: the completion's status field (0 for success); < 0: the kernel could not issue it (errno). */
    int status = ioctl((int) fd, NVME_IOCTL_IO_CMD, &cmd);
    if (status < 0) {
        bn_throw_errno(env, "ioctl(NVME_IOCTL_IO_CMD)", shown, errno);
    } else {
        jint values[BN_NVME_LENGTH];
        values[BN_NVME_STATUS] = (jint) status;
        values[BN_NVME_RESULT] = (jint) cmd.result;
        result = (*env)->NewIntArray(env, BN_NVME_LENGTH);
        if (result != NULL) {
            (*env)->SetIntArrayRegion(env, result, 0, BN_NVME_LENGTH, values);
        }
    }
    if (data != NULL) {
        (*env)->ReleaseByteArrayElements(env, j_data, data, (opcode & 0x3) == 0x2 ? 0 : JNI_ABORT);
    }
    return result;
}
