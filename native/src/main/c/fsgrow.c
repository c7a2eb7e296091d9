/*
 * Growing a mounted filesystem by descriptor: the ioctls xfs_growfs and resize2fs send, sent here to a
 * directory the caller opened beneath the kubelet root, so no mount is ever looked up by name. Thin
 * wrappers only: which descriptor, what to check and how many blocks are decided in Java.
 *
 * Neither xfslibs-dev's <xfs/xfs_fs.h> nor an ext4 UAPI header is needed: the structures and request
 * numbers below are copied from the kernel's fs/xfs/libxfs/xfs_fs.h (struct xfs_fsop_geom_v1,
 * struct xfs_growfs_data, XFS_IOC_FSGEOMETRY_V1 = _IOR('X', 100, ...), XFS_IOC_FSGROWFSDATA =
 * _IOW('X', 110, ...)) and include/uapi/linux/ext4.h (EXT4_IOC_RESIZE_FS = _IOW('f', 16, __u64)), and the
 * sizes the request numbers encode are checked at compile time.
 */
#include "blocknode.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Output of XFS_IOC_FSGEOMETRY_V1 (every kernel with xfs has it; later versions only append fields). */
struct bn_xfs_fsop_geom_v1 {
    uint32_t blocksize;    /* filesystem (data) block size */
    uint32_t rtextsize;
    uint32_t agblocks;
    uint32_t agcount;
    uint32_t logblocks;
    uint32_t sectsize;
    uint32_t inodesize;
    uint32_t imaxpct;      /* max allowed inode space, percent */
    uint64_t datablocks;   /* fsblocks in the data subvolume */
    uint64_t rtblocks;
    uint64_t rtextents;
    uint64_t logstart;
    unsigned char uuid[16];
    uint32_t sunit;
    uint32_t swidth;
    int32_t version;
    uint32_t flags;
    uint32_t logsectsize;
    uint32_t rtsectsize;
    uint32_t dirblocksize;
};

/* Input of XFS_IOC_FSGROWFSDATA. */
struct bn_xfs_growfs_data {
    uint64_t newblocks;    /* new data subvolume size, fsblocks */
    uint32_t imaxpct;      /* new inode space percentage limit */
};

#define BN_XFS_IOC_FSGEOMETRY_V1 _IOR('X', 100, struct bn_xfs_fsop_geom_v1)
#define BN_XFS_IOC_FSGROWFSDATA _IOW('X', 110, struct bn_xfs_growfs_data)
#define BN_EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t)

/* The x86-64 layouts the kernel expects (its structs carry the same implicit padding). */
_Static_assert(sizeof(struct bn_xfs_fsop_geom_v1) == 112, "xfs_fsop_geom_v1 is 112 bytes");
_Static_assert(offsetof(struct bn_xfs_fsop_geom_v1, datablocks) == 32, "xfs_fsop_geom_v1.datablocks at 32");
_Static_assert(sizeof(struct bn_xfs_growfs_data) == 16, "xfs_growfs_data is 16 bytes");
_Static_assert(BN_XFS_IOC_FSGEOMETRY_V1 == 0x80705864, "XFS_IOC_FSGEOMETRY_V1");
_Static_assert(BN_XFS_IOC_FSGROWFSDATA == 0x4010586e, "XFS_IOC_FSGROWFSDATA");
_Static_assert(BN_EXT4_IOC_RESIZE_FS == 0x40086610, "EXT4_IOC_RESIZE_FS");

static void throw_for_descriptor(JNIEnv *env, const char *syscall, int fd, int err) {
    char shown[32];
    snprintf(shown, sizeof(shown), "descriptor %d", fd);
    bn_throw_errno(env, syscall, shown, err);
}

/* The directory an O_PATH descriptor stands for, opened again for reading (ioctl fails on O_PATH): "." looked
 * up in it, which names that very directory (no mount on top of it is crossed, nothing is followed). */
jint JNICALL bn_reopen_directory(JNIEnv *env, jclass clazz, jint path_fd) {
    (void) clazz;
    int fd = openat((int) path_fd, ".", O_RDONLY | O_DIRECTORY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        throw_for_descriptor(env, "openat", (int) path_fd, errno);
    }
    return (jint) fd;
}

jlongArray JNICALL bn_xfs_geometry(JNIEnv *env, jclass clazz, jint fd) {
    (void) clazz;
    struct bn_xfs_fsop_geom_v1 geometry;
    memset(&geometry, 0, sizeof(geometry));
    if (ioctl((int) fd, BN_XFS_IOC_FSGEOMETRY_V1, &geometry) != 0) {
        throw_for_descriptor(env, "ioctl(XFS_IOC_FSGEOMETRY_V1)", (int) fd, errno);
        return NULL;
    }
    jlong values[BN_XFS_GEOMETRY_LENGTH];
    values[BN_XFS_GEOMETRY_BLOCK_SIZE] = (jlong) geometry.blocksize;
    values[BN_XFS_GEOMETRY_DATA_BLOCKS] = (jlong) geometry.datablocks;
    values[BN_XFS_GEOMETRY_IMAXPCT] = (jlong) geometry.imaxpct;
    values[BN_XFS_GEOMETRY_AG_BLOCKS] = (jlong) geometry.agblocks;
    return bn_new_long_array(env, values, BN_XFS_GEOMETRY_LENGTH);
}

void JNICALL bn_xfs_grow_data(JNIEnv *env, jclass clazz, jint fd, jlong new_blocks, jint imaxpct) {
    (void) clazz;
    if (new_blocks <= 0 || imaxpct < 0) {
        throw_for_descriptor(env, "ioctl(XFS_IOC_FSGROWFSDATA)", (int) fd, EINVAL);
        return;
    }
    struct bn_xfs_growfs_data in;
    memset(&in, 0, sizeof(in));
    in.newblocks = (uint64_t) new_blocks;
    in.imaxpct = (uint32_t) imaxpct;
    if (ioctl((int) fd, BN_XFS_IOC_FSGROWFSDATA, &in) != 0) {
        throw_for_descriptor(env, "ioctl(XFS_IOC_FSGROWFSDATA)", (int) fd, errno);
    }
}

void JNICALL bn_ext4_resize(JNIEnv *env, jclass clazz, jint fd, jlong new_blocks) {
    (void) clazz;
    if (new_blocks <= 0) {
        throw_for_descriptor(env, "ioctl(EXT4_IOC_RESIZE_FS)", (int) fd, EINVAL);
        return;
    }
    uint64_t blocks = (uint64_t) new_blocks;
    if (ioctl((int) fd, BN_EXT4_IOC_RESIZE_FS, &blocks) != 0) {
        throw_for_descriptor(env, "ioctl(EXT4_IOC_RESIZE_FS)", (int) fd, errno);
    }
}
