/*
 * SG_IO: one SCSI command sent to a block device's LUN through the I_T nexus of that device (for a SCSI
 * disk, its one path), on a descriptor Java opened first (bn_open_block_device) and checked the identity of
 * by its device number. No policy: the CDB, the data and the timeout come from Java, and what the
 * midlayer and the device said goes back as numbers and the sense bytes; Java decodes them.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <scsi/sg.h>

#define BN_MAX_CDB 16

/* Read-only: a close after a writable open would make udev re-probe the disk (its inotify watch), and the PR
 * commands need CAP_SYS_RAWIO either way. O_NONBLOCK: never wait in open for the device. O_NOFOLLOW: the
 * device node itself, never where a link points. The open descriptor keeps the disk's name and number from
 * being given to another disk until it is closed, which is what makes a check of its identity by number hold. */
jint JNICALL bn_open_block_device(JNIEnv *env, jclass clazz, jstring j_device_path) {
    (void) clazz;
    const char *device_path = NULL;
    struct stat st;

    if (bn_utf_get(env, j_device_path, "devicePath", 0, &device_path) != 0) {
        return -1;
    }
    int fd = open(device_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        bn_throw_errno(env, "open", device_path, errno);
    } else if (fstat(fd, &st) != 0) {
        bn_throw_errno(env, "fstat", device_path, errno);
        close(fd);
        fd = -1;
    } else if (!S_ISBLK(st.st_mode)) {
        bn_throw_errno(env, "open", device_path, ENOTBLK);
        close(fd);
        fd = -1;
    }
    bn_utf_release(env, j_device_path, device_path);
    return (jint) fd;
}

jintArray JNICALL bn_scsi_command(JNIEnv *env, jclass clazz, jint fd, jbyteArray j_cdb,
                                  jint direction, jbyteArray j_data, jbyteArray j_sense, jint timeout_millis) {
    (void) clazz;
    char shown[32];
    jintArray result = NULL;
    jbyte cdb[BN_MAX_CDB];
    jbyte *data = NULL;
    jbyte sense[255];
    sg_io_hdr_t io;

    if (j_cdb == NULL || j_sense == NULL) {
        bn_throw_npe(env, "cdb and sense must not be null");
        return NULL;
    }
    jsize cdb_length = (*env)->GetArrayLength(env, j_cdb);
    jsize sense_length = (*env)->GetArrayLength(env, j_sense);
    jsize data_length = j_data == NULL ? 0 : (*env)->GetArrayLength(env, j_data);
    int dxfer = direction == BN_SCSI_TO_DEVICE ? SG_DXFER_TO_DEV
                : direction == BN_SCSI_FROM_DEVICE ? SG_DXFER_FROM_DEV
                                                   : SG_DXFER_NONE;
    if (cdb_length < 6 || cdb_length > BN_MAX_CDB || sense_length > (jsize) sizeof(sense) || timeout_millis <= 0
        || (dxfer == SG_DXFER_NONE) != (data_length == 0)) {
        bn_throw_errno(env, "SG_IO", "(arguments)", EINVAL);
        return NULL;
    }
    snprintf(shown, sizeof(shown), "descriptor %d", (int) fd);
    (*env)->GetByteArrayRegion(env, j_cdb, 0, cdb_length, cdb);
    if (data_length > 0) {
        data = (*env)->GetByteArrayElements(env, j_data, NULL);
        if (data == NULL) {
            goto out; /* OutOfMemoryError pending */
        }
    }
    memset(&io, 0, sizeof(io));
    memset(sense, 0, sizeof(sense));
    io.interface_id = 'S';
    io.cmd_len = (unsigned char) cdb_length;
    io.cmdp = (unsigned char *) cdb;
    io.dxfer_direction = dxfer;
    io.dxfer_len = (unsigned int) data_length;
    io.dxferp = data;
    io.mx_sb_len = (unsigned char) sense_length;
    io.sbp = (unsigned char *) sense;
    io.timeout = (unsigned int) timeout_millis;

    if (ioctl((int) fd, SG_IO, &io) != 0) {
        bn_throw_errno(env, "ioctl(SG_IO)", shown, errno);
    } else {
        jint values[BN_SCSI_LENGTH];
        values[BN_SCSI_STATUS] = io.status;
        values[BN_SCSI_HOST_STATUS] = io.host_status;
        values[BN_SCSI_DRIVER_STATUS] = io.driver_status;
        values[BN_SCSI_RESIDUAL] = io.resid;
        values[BN_SCSI_SENSE_LENGTH] = io.sb_len_wr;
        values[BN_SCSI_DURATION] = (jint) io.duration;
        result = (*env)->NewIntArray(env, BN_SCSI_LENGTH);
        if (result != NULL) {
            (*env)->SetIntArrayRegion(env, result, 0, BN_SCSI_LENGTH, values);
            if (io.sb_len_wr > 0) {
                (*env)->SetByteArrayRegion(env, j_sense, 0, io.sb_len_wr, sense);
            }
        }
    }
out:
    if (data != NULL) {
        /* Copy back what the device sent (data in); for data out, nothing changed. */
        (*env)->ReleaseByteArrayElements(env, j_data, data, dxfer == SG_DXFER_FROM_DEV ? 0 : JNI_ABORT);
    }
    return result;
}
