package dev.blocknode.lifecycle;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A full state disk: the plugin's record directory on a 64 KiB tmpfs, filled up. Staging and unstaging
 * must fail with RESOURCE_EXHAUSTED naming the state dir before changing anything on the host (the record
 * is written before any format or mount, and before unstage unmounts), leave no temp file, and succeed once
 * space is freed. RESOURCE_EXHAUSTED rather than INTERNAL: gRPC's code for a full filesystem, and one
 * kubelet treats as not final, so it keeps tearing down a volume whose stage might be partly in place.
 */
@Tag("host")
class FullStateDiskHostTest {

    @Test
    void noRoomForTheRecordChangesNothingAndARetryAfterFreeingSpaceWorks() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("full", 64L << 20);
            Path staging = plugin.stagingPath("full");
            Path volumes = plugin.stateDir().resolve("volumes");
            LinuxNative.mount("tmpfs", volumes.toString(), "tmpfs", 0, "size=64k,mode=0700");
            try {
                Path filler = fill(volumes);

                StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () ->
                        plugin.client().node().nodeStageVolume(stage("full", loop.device(), staging, mount("ext4"))));

                assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode(), e.getMessage());
                assertTrue(e.getStatus().getDescription().contains("state directory " + volumes + " is full"),
                        e.getStatus().getDescription());
                assertFalse(LinuxNative.isMountPoint(staging.toString()), "nothing was mounted");
                assertTrue(firstMebibyteIsZero(loop.device()), "the device was not formatted");
                assertEquals(List.of(filler), filesIn(volumes), "no record and no temp file left");

                Files.delete(filler);
                plugin.client().node().nodeStageVolume(stage("full", loop.device(), staging, mount("ext4")));
                assertTrue(LinuxNative.isMountPoint(staging.toString()));

                // Full again: unstage refuses before it unmounts anything, and the record stays as it was.
                filler = fill(volumes);
                StatusRuntimeException busy = assertThrows(StatusRuntimeException.class, () ->
                        plugin.client().node().nodeUnstageVolume(unstage("full", staging)));
                assertEquals(Status.Code.RESOURCE_EXHAUSTED, busy.getStatus().getCode(), busy.getMessage());
                assertTrue(LinuxNative.isMountPoint(staging.toString()), "still mounted: nothing was changed");
                assertEquals(StagePhase.STAGED, new RecordStore(plugin.stateDir()).load("full").orElseThrow().getPhase());
                assertEquals(2, filesIn(volumes).size(), "the record and the filler, no temp file");

                Files.delete(filler);
                plugin.client().node().nodeUnstageVolume(unstage("full", staging));
                assertFalse(LinuxNative.isMountPoint(staging.toString()));
                assertEquals(List.of(), filesIn(volumes));
            } finally {
                LinuxNative.umount2(volumes.toString(), 0);
            }
        }
    }

    /** Writes a file until the filesystem refuses more. */
    private static Path fill(Path dir) throws IOException {
        Path filler = dir.resolve("filler");
        byte[] chunk = new byte[4096];
        try (OutputStream out = Files.newOutputStream(filler)) {
            for (int i = 0; i < 1024; i++) {
                out.write(chunk);
                out.flush();
            }
        } catch (IOException full) {
            return filler;
        }
        throw new AssertionError("4 MiB fitted into the 64 KiB tmpfs at " + dir);
    }

    private static List<Path> filesIn(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.sorted().toList();
        }
    }

    private static boolean firstMebibyteIsZero(Path device) throws IOException {
        try (InputStream in = Files.newInputStream(device)) {
            byte[] head = in.readNBytes(1 << 20);
            for (byte b : head) {
                if (b != 0) {
                    return false;
                }
            }
            return head.length == 1 << 20;
        }
    }
}
