package dev.blocknode.lifecycle;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Unstage after the staging record was lost (a wiped state dir): the record is rebuilt from the staging
 * mount and sysfs, and the volume torn down through the same path as a recorded one. A loop device is no
 * transport's to detach: it is unmounted and flushed, and stays. (The SAN cases: StagingRecordRebuilderUnitTest.)
 */
@Tag("host")
class LostRecordHostTest {

    @Test
    void aStagedVolumeWhoseRecordIsGoneIsStillUnstaged() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("lost", 64L << 20);
            Path staging = plugin.stagingPath("lost");
            plugin.client().node().nodeStageVolume(stage("lost", loop.device(), staging, mount("ext4")));
            Files.writeString(staging.resolve("data"), "written before the record was lost");
            assertEquals(1, recordFiles(plugin));
            try (Stream<Path> records = Files.list(plugin.stateDir().resolve("volumes"))) {
                for (Path record : records.toList()) {
                    Files.delete(record);
                }
            }

            plugin.client().node().nodeUnstageVolume(unstage("lost", staging));

            assertFalse(LinuxNative.isMountPoint(staging.toString()), "the staging path is unmounted");
            assertEquals(0, recordFiles(plugin), "the rebuilt record is deleted once the volume is gone");
            assertTrue(Files.exists(loop.device()), "a loop device is not detached: it was on the node before");
            plugin.client().node().nodeUnstageVolume(unstage("lost", staging)); // kubelet's retry: a no-op

            // The data was flushed and the filesystem is intact: it stages again and reads back.
            plugin.client().node().nodeStageVolume(stage("lost", loop.device(), staging, mount("ext4")));
            assertEquals("written before the record was lost", Files.readString(staging.resolve("data")));
            plugin.client().node().nodeUnstageVolume(unstage("lost", staging));
        }
    }

    private static long recordFiles(PluginHarness plugin) throws Exception {
        try (Stream<Path> records = Files.list(plugin.stateDir().resolve("volumes"))) {
            return records.count();
        }
    }
}
