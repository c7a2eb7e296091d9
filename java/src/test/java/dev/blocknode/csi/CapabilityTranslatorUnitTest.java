package dev.blocknode.csi;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.request.AccessType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one capability validator, which NodeStageVolume, NodePublishVolume, NodeExpandVolume,
 * ControllerPublishVolume and ValidateVolumeCapabilities all call: fs_type and mount flags per filesystem.
 */
class CapabilityTranslatorUnitTest {

    private static VolumeCapability mount(String fsType, String... flags) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType).addAllMountFlags(List.of(flags)))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
    }

    private static VolumeException refused(VolumeCapability capability) {
        VolumeException e = assertThrows(VolumeException.class,
                () -> CapabilityTranslator.translate("volume_capability", capability));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome(), e.getMessage());
        return e;
    }

    @Test
    void anFsTypeTheNodeDoesNotMountIsRefusedWithoutQuotingIt() {
        String message = refused(mount("ext4;rm -rf /")).getMessage();
        assertTrue(message.contains("volume_capability.mount.fs_type"), message);
        assertFalse(message.contains("rm -rf"), message);
        refused(mount("btrfs"));
    }

    @Test
    void aMountFlagTheFilesystemDoesNotTakeIsRefusedNamingIt() {
        String message = refused(mount("ext4", "foo=bar")).getMessage();
        assertTrue(message.contains("volume_capability.mount.mount_flags") && message.contains("mount option foo="),
                message);
        assertFalse(message.contains("bar"), message);
        refused(mount("xfs", "logbufs=99"));
    }

    @Test
    void kubeletsSeLinuxContextWithACommaInQuotesIsAccepted() throws VolumeException {
        String context = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";
        for (String fs : List.of("ext4", "xfs", "")) {
            var translated = CapabilityTranslator.translate("volume_capability", mount(fs, "nosuid", context));
            assertEquals(List.of(context), ((AccessType.Mount) translated.accessType()).options().data());
        }
    }
}
