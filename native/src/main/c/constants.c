/*
 * Load-time self-check: every constant LinuxNative declares in Java must equal the C header's
 * (or, for the STAT_* and STATVFS_* indexes, the layout the C side fills in).
 */
#include "blocknode.h"

#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

struct bn_constant {
    const char *name;
    char java_type; /* 'J' for long, 'I' for int */
    jlong value;
};

#define BN_LONG(java_name, c_value) { java_name, 'J', (jlong) (c_value) }
#define BN_INT(java_name, c_value) { java_name, 'I', (jlong) (c_value) }

static const struct bn_constant constants[] = {
    BN_LONG("MS_RDONLY", MS_RDONLY),
    BN_LONG("MS_NOSUID", MS_NOSUID),
    BN_LONG("MS_NODEV", MS_NODEV),
    BN_LONG("MS_NOEXEC", MS_NOEXEC),
    BN_LONG("MS_SYNCHRONOUS", MS_SYNCHRONOUS),
    BN_LONG("MS_REMOUNT", MS_REMOUNT),
    BN_LONG("MS_MANDLOCK", MS_MANDLOCK),
    BN_LONG("MS_DIRSYNC", MS_DIRSYNC),
    BN_LONG("MS_NOATIME", MS_NOATIME),
    BN_LONG("MS_NODIRATIME", MS_NODIRATIME),
    BN_LONG("MS_BIND", MS_BIND),
    BN_LONG("MS_MOVE", MS_MOVE),
    BN_LONG("MS_REC", MS_REC),
    BN_LONG("MS_SILENT", MS_SILENT),
    BN_LONG("MS_UNBINDABLE", MS_UNBINDABLE),
    BN_LONG("MS_PRIVATE", MS_PRIVATE),
    BN_LONG("MS_SLAVE", MS_SLAVE),
    BN_LONG("MS_SHARED", MS_SHARED),
    BN_LONG("MS_RELATIME", MS_RELATIME),
    BN_LONG("MS_STRICTATIME", MS_STRICTATIME),
    BN_LONG("MS_LAZYTIME", MS_LAZYTIME),

    BN_LONG("MOUNT_ATTR_RDONLY", MOUNT_ATTR_RDONLY),
    BN_LONG("MOUNT_ATTR_NOSUID", MOUNT_ATTR_NOSUID),
    BN_LONG("MOUNT_ATTR_NODEV", MOUNT_ATTR_NODEV),
    BN_LONG("MOUNT_ATTR_NOEXEC", MOUNT_ATTR_NOEXEC),
    BN_LONG("MOUNT_ATTR__ATIME", MOUNT_ATTR__ATIME),
    BN_LONG("MOUNT_ATTR_RELATIME", MOUNT_ATTR_RELATIME),
    BN_LONG("MOUNT_ATTR_NOATIME", MOUNT_ATTR_NOATIME),
    BN_LONG("MOUNT_ATTR_STRICTATIME", MOUNT_ATTR_STRICTATIME),
    BN_LONG("MOUNT_ATTR_NODIRATIME", MOUNT_ATTR_NODIRATIME),

    BN_INT("MNT_FORCE", MNT_FORCE),
    BN_INT("MNT_DETACH", MNT_DETACH),
    BN_INT("MNT_EXPIRE", MNT_EXPIRE),
    BN_INT("UMOUNT_NOFOLLOW", UMOUNT_NOFOLLOW),

    BN_INT("STAT_DEV_MAJOR", BN_STAT_DEV_MAJOR),
    BN_INT("STAT_DEV_MINOR", BN_STAT_DEV_MINOR),
    BN_INT("STAT_RDEV_MAJOR", BN_STAT_RDEV_MAJOR),
    BN_INT("STAT_RDEV_MINOR", BN_STAT_RDEV_MINOR),
    BN_INT("STAT_MODE", BN_STAT_MODE),
    BN_INT("STAT_MOUNT_ROOT", BN_STAT_MOUNT_ROOT),
    BN_INT("STAT_INODE", BN_STAT_INODE),
    BN_INT("STAT_LENGTH", BN_STAT_LENGTH),

    BN_INT("OPEN_CREATE_DIRECTORIES", 1),
    BN_INT("OPEN_WALK", 2),
    BN_INT("OPEN_DIRECTORY", 4),

    BN_LONG("S_IFMT", S_IFMT),
    BN_LONG("S_IFDIR", S_IFDIR),
    BN_LONG("S_IFCHR", S_IFCHR),
    BN_LONG("S_IFBLK", S_IFBLK),
    BN_LONG("S_IFREG", S_IFREG),
    BN_LONG("S_IFLNK", S_IFLNK),

    BN_INT("STATVFS_BSIZE", BN_STATVFS_BSIZE),
    BN_INT("STATVFS_FRSIZE", BN_STATVFS_FRSIZE),
    BN_INT("STATVFS_BLOCKS", BN_STATVFS_BLOCKS),
    BN_INT("STATVFS_BFREE", BN_STATVFS_BFREE),
    BN_INT("STATVFS_BAVAIL", BN_STATVFS_BAVAIL),
    BN_INT("STATVFS_FILES", BN_STATVFS_FILES),
    BN_INT("STATVFS_FFREE", BN_STATVFS_FFREE),
    BN_INT("STATVFS_FAVAIL", BN_STATVFS_FAVAIL),
    BN_INT("STATVFS_FLAG", BN_STATVFS_FLAG),
    BN_INT("STATVFS_LENGTH", BN_STATVFS_LENGTH),

    BN_LONG("ST_RDONLY", ST_RDONLY),

    BN_INT("SCSI_STATUS", BN_SCSI_STATUS),
    BN_INT("SCSI_HOST_STATUS", BN_SCSI_HOST_STATUS),
    BN_INT("SCSI_DRIVER_STATUS", BN_SCSI_DRIVER_STATUS),
    BN_INT("SCSI_RESIDUAL", BN_SCSI_RESIDUAL),
    BN_INT("SCSI_SENSE_LENGTH", BN_SCSI_SENSE_LENGTH),
    BN_INT("SCSI_DURATION", BN_SCSI_DURATION),
    BN_INT("SCSI_LENGTH", BN_SCSI_LENGTH),
    BN_INT("SCSI_NO_DATA", BN_SCSI_NO_DATA),
    BN_INT("SCSI_TO_DEVICE", BN_SCSI_TO_DEVICE),
    BN_INT("SCSI_FROM_DEVICE", BN_SCSI_FROM_DEVICE),

    BN_INT("NVME_STATUS", BN_NVME_STATUS),
    BN_INT("NVME_RESULT", BN_NVME_RESULT),
    BN_INT("NVME_LENGTH", BN_NVME_LENGTH),

    BN_INT("XFS_GEOMETRY_BLOCK_SIZE", BN_XFS_GEOMETRY_BLOCK_SIZE),
    BN_INT("XFS_GEOMETRY_DATA_BLOCKS", BN_XFS_GEOMETRY_DATA_BLOCKS),
    BN_INT("XFS_GEOMETRY_IMAXPCT", BN_XFS_GEOMETRY_IMAXPCT),
    BN_INT("XFS_GEOMETRY_AG_BLOCKS", BN_XFS_GEOMETRY_AG_BLOCKS),
    BN_INT("XFS_GEOMETRY_LENGTH", BN_XFS_GEOMETRY_LENGTH),
};

int bn_check_constants(JNIEnv *env, jclass linux_native) {
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        const struct bn_constant *c = &constants[i];
        const char *signature = c->java_type == 'J' ? "J" : "I";
        jfieldID field = (*env)->GetStaticFieldID(env, linux_native, c->name, signature);
        if (field == NULL) {
            return -1; /* NoSuchFieldError pending */
        }
        jlong java_value = c->java_type == 'J'
                               ? (*env)->GetStaticLongField(env, linux_native, field)
                               : (jlong) (*env)->GetStaticIntField(env, linux_native, field);
        if (java_value != c->value) {
            char message[160];
            snprintf(message, sizeof(message),
                     "libblocknode: LinuxNative.%s is %lld but the C side has %lld",
                     c->name, (long long) java_value, (long long) c->value);
            bn_throw_link_error(env, message);
            return -1;
        }
    }
    return 0;
}
