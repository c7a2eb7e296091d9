/*
 * Internal interface of libblocknode: the JNI functions that jni_onload.c registers on
 * dev.blocknode.os.natives.LinuxNative, and the helpers they share. Not installed anywhere.
 */
#ifndef BLOCKNODE_H
#define BLOCKNODE_H

#include <jni.h>

#define BN_PACKAGE "dev/blocknode/os/natives/"
#define BN_LINUX_NATIVE BN_PACKAGE "LinuxNative"

/* Index layout of the arrays returned by stat() and statvfs(); checked against the Java
 * constants of the same names (STAT_*, STATVFS_*) at load time by constants.c. */
enum bn_stat_index {
    BN_STAT_DEV_MAJOR,
    BN_STAT_DEV_MINOR,
    BN_STAT_RDEV_MAJOR,
    BN_STAT_RDEV_MINOR,
    BN_STAT_MODE,
    BN_STAT_MOUNT_ROOT,
    BN_STAT_INODE,
    BN_STAT_LENGTH
};

enum bn_statvfs_index {
    BN_STATVFS_BSIZE,
    BN_STATVFS_FRSIZE,
    BN_STATVFS_BLOCKS,
    BN_STATVFS_BFREE,
    BN_STATVFS_BAVAIL,
    BN_STATVFS_FILES,
    BN_STATVFS_FFREE,
    BN_STATVFS_FAVAIL,
    BN_STATVFS_FLAG,
    BN_STATVFS_LENGTH
};

/* Index layout of the array returned by scsiCommand(), and its data directions; checked against the Java
 * constants SCSI_* at load time by constants.c. */
enum bn_scsi_index {
    BN_SCSI_STATUS,
    BN_SCSI_HOST_STATUS,
    BN_SCSI_DRIVER_STATUS,
    BN_SCSI_RESIDUAL,
    BN_SCSI_SENSE_LENGTH,
    BN_SCSI_DURATION,
    BN_SCSI_LENGTH
};

enum bn_scsi_direction {
    BN_SCSI_NO_DATA,
    BN_SCSI_TO_DEVICE,
    BN_SCSI_FROM_DEVICE
};

/* Index layout of the array returned by nvmeIoCommand(); checked against the Java constants NVME_* at load
 * time by constants.c. */
enum bn_nvme_index {
    BN_NVME_STATUS,
    BN_NVME_RESULT,
    BN_NVME_LENGTH
};

/* Index layout of the array returned by xfsGeometry(); checked against XFS_GEOMETRY_* by constants.c. */
enum bn_xfs_geometry_index {
    BN_XFS_GEOMETRY_BLOCK_SIZE,
    BN_XFS_GEOMETRY_DATA_BLOCKS,
    BN_XFS_GEOMETRY_IMAXPCT,
    BN_XFS_GEOMETRY_AG_BLOCKS,
    BN_XFS_GEOMETRY_LENGTH
};

/* ---- errors.c ------------------------------------------------------------------------------ */

/* Caches NativeIOException and its constructor as global refs. 0, or -1 with an exception pending. */
int bn_errors_init(JNIEnv *env);
/* Drops what bn_errors_init cached. */
void bn_errors_destroy(JNIEnv *env);
/* Throws NativeIOException with err, its name and strerror text, naming syscall and path (path may be NULL).
 * Does nothing if an exception is already pending. */
void bn_throw_errno(JNIEnv *env, const char *syscall, const char *path, int err);
/* bn_throw_errno naming "source -> target" as the path (a NULL source shown as "(null)"): mounts, binds. */
void bn_throw_errno_from_to(JNIEnv *env, const char *syscall, const char *source, const char *target, int err);
/* Throws java.lang.NullPointerException / OutOfMemoryError / UnsatisfiedLinkError with message. */
void bn_throw_npe(JNIEnv *env, const char *message);
void bn_throw_oom(JNIEnv *env, const char *message);
void bn_throw_link_error(JNIEnv *env, const char *message);

/* ---- jstrings.c ---------------------------------------------------------------------------- */

/* Gets the (modified) UTF-8 chars of s into *out. A NULL s gives *out = NULL if nullable, else a
 * NullPointerException naming `name`. Returns 0, or -1 with an exception pending. */
int bn_utf_get(JNIEnv *env, jstring s, const char *name, int nullable, const char **out);
/* Releases what bn_utf_get returned; a NULL chars is a no-op. Safe with an exception pending. */
void bn_utf_release(JNIEnv *env, jstring s, const char *chars);
/* A new long[] holding values, or NULL with an exception pending. */
jlongArray bn_new_long_array(JNIEnv *env, const jlong *values, jsize length);

/* ---- constants.c --------------------------------------------------------------------------- */

/* Compares LinuxNative's constants with the C headers. 0, or -1 with an exception pending. */
int bn_check_constants(JNIEnv *env, jclass linux_native);

/* ---- the native methods of LinuxNative ----------------------------------------------------- */

/* mount.c */
void JNICALL bn_mount(JNIEnv *env, jclass clazz, jstring source, jstring target, jstring fs_type,
                      jlong flags, jstring data);
void JNICALL bn_umount2(JNIEnv *env, jclass clazz, jstring target, jint flags);

/* bind.c */
void JNICALL bn_bind_with_attributes(JNIEnv *env, jclass clazz, jstring source, jstring target,
                                     jlong attr_set, jlong attr_clear);

/* stat.c */
jboolean JNICALL bn_is_mount_point(JNIEnv *env, jclass clazz, jstring path);
jlongArray JNICALL bn_stat(JNIEnv *env, jclass clazz, jstring path);
struct statx;
/* The BN_STAT_* array of a statx result; NULL with an exception pending on failure. */
jlongArray bn_stat_array(JNIEnv *env, const struct statx *stx);

/* at.c */
jint JNICALL bn_open_beneath(JNIEnv *env, jclass clazz, jint dir_fd, jstring relative, jint options);
jint JNICALL bn_open_directory(JNIEnv *env, jclass clazz, jstring path);
jlongArray JNICALL bn_stat_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring name);
jboolean JNICALL bn_create_file_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring name);
void JNICALL bn_unlink_at(JNIEnv *env, jclass clazz, jint dir_fd, jstring name, jboolean directory);

/* statvfs.c */
jlongArray JNICALL bn_statvfs(JNIEnv *env, jclass clazz, jstring path);
jlongArray JNICALL bn_fstatvfs(JNIEnv *env, jclass clazz, jint fd);

/* blockdev.c */
jlong JNICALL bn_block_device_size(JNIEnv *env, jclass clazz, jstring device_path);
jint JNICALL bn_block_sector_size(JNIEnv *env, jclass clazz, jstring device_path);
void JNICALL bn_flush_block_buffers(JNIEnv *env, jclass clazz, jstring device_path);
jboolean JNICALL bn_is_block_device_claimed(JNIEnv *env, jclass clazz, jstring device_path);

/* sgio.c */
jint JNICALL bn_open_block_device(JNIEnv *env, jclass clazz, jstring device_path);
jintArray JNICALL bn_scsi_command(JNIEnv *env, jclass clazz, jint fd, jbyteArray cdb, jint direction,
                                  jbyteArray data, jbyteArray sense, jint timeout_millis);

/* nvme.c */
jint JNICALL bn_nvme_namespace_id(JNIEnv *env, jclass clazz, jint fd);
jintArray JNICALL bn_nvme_io_command(JNIEnv *env, jclass clazz, jint fd, jint opcode, jint nsid,
                                     jintArray dwords, jbyteArray data, jint timeout_millis);

/* dm.c */
void JNICALL bn_dm_target_message(JNIEnv *env, jclass clazz, jstring control, jstring name, jstring message);
jint JNICALL bn_dm_open_count(JNIEnv *env, jclass clazz, jstring control, jstring name);
void JNICALL bn_dm_remove(JNIEnv *env, jclass clazz, jstring control, jstring name);

/* fsgrow.c */
jint JNICALL bn_reopen_directory(JNIEnv *env, jclass clazz, jint path_fd);
jlongArray JNICALL bn_xfs_geometry(JNIEnv *env, jclass clazz, jint fd);
void JNICALL bn_xfs_grow_data(JNIEnv *env, jclass clazz, jint fd, jlong new_blocks, jint imaxpct);
void JNICALL bn_ext4_resize(JNIEnv *env, jclass clazz, jint fd, jlong new_blocks);

/* fsync.c */
void JNICALL bn_fsync(JNIEnv *env, jclass clazz, jstring path);

/* readfile.c */
jint JNICALL bn_open_for_reading(JNIEnv *env, jclass clazz, jstring path);
jint JNICALL bn_read_fd(JNIEnv *env, jclass clazz, jint fd, jbyteArray buffer, jint offset, jint length);

/* unix_socket.c */
jint JNICALL bn_connect_unix_socket(JNIEnv *env, jclass clazz, jstring path);
jintArray JNICALL bn_peer_credentials(JNIEnv *env, jclass clazz, jint fd);
jbyteArray JNICALL bn_peer_address(JNIEnv *env, jclass clazz, jint fd);

/* syscalls.c */
jboolean JNICALL bn_kernel_has_openat2(JNIEnv *env, jclass clazz);
jboolean JNICALL bn_kernel_has_mount_setattr(JNIEnv *env, jclass clazz);

/* uevent.c */
jint JNICALL bn_uevent_open(JNIEnv *env, jclass clazz, jint receive_buffer_bytes);
jbyteArray JNICALL bn_uevent_receive(JNIEnv *env, jclass clazz, jint fd, jint timeout_millis);
void JNICALL bn_close_fd(JNIEnv *env, jclass clazz, jint fd);

#endif /* BLOCKNODE_H */
