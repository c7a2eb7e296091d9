/*
 * Library entry points: checks LinuxNative's constants, caches the exception class and binds
 * every native method with RegisterNatives, so no javah header or Java_* symbol is needed.
 * JNI_OnLoad and JNI_OnUnload are the only symbols the library exports (-fvisibility=hidden).
 */
#include "blocknode.h"

#define BN_STRING "Ljava/lang/String;"

static const JNINativeMethod linux_native_methods[] = {
    { "mount", "(" BN_STRING BN_STRING BN_STRING "J" BN_STRING ")V", (void *) bn_mount },
    { "umount2", "(" BN_STRING "I)V", (void *) bn_umount2 },
    { "bindWithAttributes", "(" BN_STRING BN_STRING "JJ)V", (void *) bn_bind_with_attributes },
    { "isMountPoint", "(" BN_STRING ")Z", (void *) bn_is_mount_point },
    { "stat", "(" BN_STRING ")[J", (void *) bn_stat },
    { "openBeneath", "(I" BN_STRING "I)I", (void *) bn_open_beneath },
    { "openDirectory", "(" BN_STRING ")I", (void *) bn_open_directory },
    { "statAt", "(I" BN_STRING ")[J", (void *) bn_stat_at },
    { "createFileAt", "(I" BN_STRING ")Z", (void *) bn_create_file_at },
    { "unlinkAt", "(I" BN_STRING "Z)V", (void *) bn_unlink_at },
    { "statvfs", "(" BN_STRING ")[J", (void *) bn_statvfs },
    { "fstatvfs", "(I)[J", (void *) bn_fstatvfs },
    { "blockDeviceSize", "(" BN_STRING ")J", (void *) bn_block_device_size },
    { "blockSectorSize", "(" BN_STRING ")I", (void *) bn_block_sector_size },
    { "flushBlockBuffers", "(" BN_STRING ")V", (void *) bn_flush_block_buffers },
    { "isBlockDeviceClaimed", "(" BN_STRING ")Z", (void *) bn_is_block_device_claimed },
    { "fsync", "(" BN_STRING ")V", (void *) bn_fsync },
    { "openForReading", "(" BN_STRING ")I", (void *) bn_open_for_reading },
    { "read", "(I[BII)I", (void *) bn_read_fd },
    { "openBlockDevice", "(" BN_STRING ")I", (void *) bn_open_block_device },
    { "scsiCommand", "(I[BI[B[BI)[I", (void *) bn_scsi_command },
    { "nvmeNamespaceId", "(I)I", (void *) bn_nvme_namespace_id },
    { "nvmeIoCommand", "(III[I[BI)[I", (void *) bn_nvme_io_command },
    { "openUeventSocket", "(I)I", (void *) bn_uevent_open },
    { "receiveUevent", "(II)[B", (void *) bn_uevent_receive },
    { "close", "(I)V", (void *) bn_close_fd },
    { "connectUnixSocket", "(" BN_STRING ")I", (void *) bn_connect_unix_socket },
    { "peerCredentials", "(I)[I", (void *) bn_peer_credentials },
    { "peerAddress", "(I)[B", (void *) bn_peer_address },
    { "reopenDirectory", "(I)I", (void *) bn_reopen_directory },
    { "xfsGeometry", "(I)[J", (void *) bn_xfs_geometry },
    { "xfsGrowData", "(IJI)V", (void *) bn_xfs_grow_data },
    { "ext4Resize", "(IJ)V", (void *) bn_ext4_resize },
    { "deviceMapperMessage", "(" BN_STRING BN_STRING BN_STRING ")V", (void *) bn_dm_target_message },
    { "deviceMapperOpenCount", "(" BN_STRING BN_STRING ")I", (void *) bn_dm_open_count },
    { "deviceMapperRemove", "(" BN_STRING BN_STRING ")V", (void *) bn_dm_remove },
    { "kernelHasOpenat2", "()Z", (void *) bn_kernel_has_openat2 },
    { "kernelHasMountSetattr", "()Z", (void *) bn_kernel_has_mount_setattr },
};

/* On failure an exception is left pending: the JDK rethrows it from System.load. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void) reserved;
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **) &env, JNI_VERSION_1_8) != JNI_OK) {
        return JNI_ERR;
    }
    jclass linux_native = (*env)->FindClass(env, BN_LINUX_NATIVE);
    if (linux_native == NULL) {
        return JNI_ERR;
    }
    if (bn_check_constants(env, linux_native) != 0) {
        goto fail;
    }
    if (bn_errors_init(env) != 0) {
        goto fail;
    }
    if ((*env)->RegisterNatives(env, linux_native, linux_native_methods,
                                (jint) (sizeof(linux_native_methods) / sizeof(linux_native_methods[0])))
        != 0) {
        bn_errors_destroy(env);
        goto fail;
    }
    (*env)->DeleteLocalRef(env, linux_native);
    return JNI_VERSION_1_8;
fail:
    (*env)->DeleteLocalRef(env, linux_native);
    return JNI_ERR;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM *vm, void *reserved) {
    (void) reserved;
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **) &env, JNI_VERSION_1_8) == JNI_OK) {
        bn_errors_destroy(env);
    }
}
