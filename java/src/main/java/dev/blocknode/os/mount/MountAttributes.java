package dev.blocknode.os.mount;

import dev.blocknode.os.natives.LinuxNative;

/**
 * The per-mount-point flags of mount(2) (MS_RDONLY, MS_NOSUID, ...) as mount_setattr(2) takes them: the
 * MOUNT_ATTR_* bits to set, and those to clear first. Only the atime setting is ever cleared (it is one value
 * of three, not a bit): set only when a flag names one, strictatime over noatime over relatime, as mount(2)
 * ranks them. Nothing else is cleared: the flags asked for are added to those the source's mount has.
 */
record MountAttributes(long set, long clear) {

    /** Each MS_ flag and the attribute it sets. */
    private static final long[][] BITS = {
            {LinuxNative.MS_RDONLY, LinuxNative.MOUNT_ATTR_RDONLY},
            {LinuxNative.MS_NOSUID, LinuxNative.MOUNT_ATTR_NOSUID},
            {LinuxNative.MS_NODEV, LinuxNative.MOUNT_ATTR_NODEV},
            {LinuxNative.MS_NOEXEC, LinuxNative.MOUNT_ATTR_NOEXEC},
            {LinuxNative.MS_NODIRATIME, LinuxNative.MOUNT_ATTR_NODIRATIME},
    };

    /** The atime flags, strongest first, and the setting each makes. */
    private static final long[][] ATIME = {
            {LinuxNative.MS_STRICTATIME, LinuxNative.MOUNT_ATTR_STRICTATIME},
            {LinuxNative.MS_NOATIME, LinuxNative.MOUNT_ATTR_NOATIME},
            {LinuxNative.MS_RELATIME, LinuxNative.MOUNT_ATTR_RELATIME},
    };

    static MountAttributes of(long msFlags) {
        long set = 0;
        for (long[] bit : BITS) {
            if ((msFlags & bit[0]) != 0) {
                set |= bit[1];
            }
        }
        for (long[] atime : ATIME) {
            if ((msFlags & atime[0]) != 0) {
                return new MountAttributes(set | atime[1], LinuxNative.MOUNT_ATTR__ATIME);
            }
        }
        return new MountAttributes(set, 0);
    }
}
