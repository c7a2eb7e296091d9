package dev.blocknode.os.mount;

import dev.blocknode.os.natives.LinuxNative;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class MountAttributesUnitTest {

    private static MountAttributes of(String... options) {
        return MountAttributes.of(MountOptions.parse(List.of(options)).perMountPoint().flags());
    }

    @Test
    void eachFlagIsSetAndNothingIsClearedButTheAtimeSetting() {
        assertEquals(new MountAttributes(0, 0), of());
        assertEquals(new MountAttributes(LinuxNative.MOUNT_ATTR_RDONLY | LinuxNative.MOUNT_ATTR_NOSUID
                | LinuxNative.MOUNT_ATTR_NODEV | LinuxNative.MOUNT_ATTR_NOEXEC | LinuxNative.MOUNT_ATTR_NODIRATIME, 0),
                of("ro", "nosuid", "nodev", "noexec", "nodiratime"));
    }

    @Test
    void theAtimeSettingIsOneValueRankedAsMountRanksThem() {
        assertEquals(new MountAttributes(LinuxNative.MOUNT_ATTR_NOATIME, LinuxNative.MOUNT_ATTR__ATIME), of("noatime"));
        assertEquals(new MountAttributes(LinuxNative.MOUNT_ATTR_RELATIME, LinuxNative.MOUNT_ATTR__ATIME),
                of("relatime"));
        assertEquals(new MountAttributes(LinuxNative.MOUNT_ATTR_STRICTATIME, LinuxNative.MOUNT_ATTR__ATIME),
                of("noatime", "strictatime"));
        assertEquals(new MountAttributes(LinuxNative.MOUNT_ATTR_NOATIME, LinuxNative.MOUNT_ATTR__ATIME),
                of("relatime", "noatime"));
    }
}
