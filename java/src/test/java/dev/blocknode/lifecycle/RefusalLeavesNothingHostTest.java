package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A refused NodeStageVolume leaves nothing that blocks kubelet's corrected retry: kubelet never unstages a
 * volume whose stage failed, it retries the stage with the fixed PV or options, so a staging record left by
 * the refusal would make the retry fail (ALREADY_EXISTS against arguments nothing was ever staged with).
 * And a re-stage that names another device is refused, the first device staying mounted.
 */
@Tag("host")
class RefusalLeavesNothingHostTest {

    private static final long SIZE = 64L << 20;
    /** mkfs.xfs makes nothing under 300 MB (sparse files: costs nothing). */
    private static final long XFS_SIZE = 320L << 20;

    @Test
    void aWrongFsTypeLeavesNoRecordAndTheCorrectedRetryStages() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("wrongfs", SIZE);
            new ProcessCommandRunner().runChecked(Command.of("mkfs.ext4", "-q", loop.device().toString()));
            Path staging = plugin.stagingPath("wrongfs");

            assertRefused(Status.Code.FAILED_PRECONDITION, plugin,
                    stage("wrongfs", loop.device(), staging, mount("xfs")));
            assertNoRecords(plugin);
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());

            plugin.client().node().nodeStageVolume(stage("wrongfs", loop.device(), staging, mount("ext4")));
            assertMountOf(plugin, staging, loop);
            plugin.client().node().nodeUnstageVolume(unstage("wrongfs", staging));
            assertNoRecords(plugin);
        }
    }

    @Test
    void anotherVolumesStagingPathLeavesNoRecordAndTheCorrectedRetryStages() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice first = plugin.newLoopDevice("first", SIZE);
            LoopDevice second = plugin.newLoopDevice("second", SIZE);
            Path firstStaging = plugin.stagingPath("first");
            Path secondStaging = plugin.stagingPath("second");
            plugin.client().node().nodeStageVolume(stage("first", first.device(), firstStaging, mount("ext4")));

            assertRefused(Status.Code.ALREADY_EXISTS, plugin,
                    stage("second", second.device(), firstStaging, mount("ext4")));
            assertEquals(1, recordCount(plugin), "only the first volume's record is left");
            assertMountOf(plugin, firstStaging, first);

            plugin.client().node().nodeStageVolume(stage("second", second.device(), secondStaging, mount("ext4")));
            assertMountOf(plugin, secondStaging, second);
            plugin.client().node().nodeUnstageVolume(unstage("second", secondStaging));
            plugin.client().node().nodeUnstageVolume(unstage("first", firstStaging));
            assertNoRecords(plugin);
        }
    }

    @Test
    void aRefusedMountOptionLeavesNoRecordAndTheCorrectedRetryStages() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("badopt", SIZE);
            Path staging = plugin.stagingPath("badopt");
            VolumeCapability bad = mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
                    "no_such_ext4_option");

            assertRefused(Status.Code.INVALID_ARGUMENT, plugin, stage("badopt", loop.device(), staging, bad));
            assertNoRecords(plugin);
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());

            VolumeCapability fixed = mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER, "noatime");
            plugin.client().node().nodeStageVolume(stage("badopt", loop.device(), staging, fixed));
            assertMountOf(plugin, staging, loop);
            plugin.client().node().nodeUnstageVolume(unstage("badopt", staging));
            assertNoRecords(plugin);
        }
    }

    /** Options that each formatted the blank device before mount(2) refused them, before the fix. */
    static Stream<Arguments> optionsNoFilesystemTakes() {
        return Stream.of(
                Arguments.of("ext4", "foo=bar", "foo", "bar"),
                Arguments.of("ext4", "nosuid,x=y", "x", null),
                Arguments.of("xfs", "foo=bar", "foo", "bar"),
                Arguments.of("ext4", "data=bogus", "data", "bogus"),
                Arguments.of("xfs", "logbufs=99", "logbufs", "99"),
                Arguments.of("ext4", "commit=abc", "commit", "abc"));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("optionsNoFilesystemTakes")
    void anOptionTheFilesystemDoesNotTakeIsRefusedBeforeTheBlankDeviceIsFormatted(String fs, String flags,
                                                                                   String name, String value)
            throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("opts", XFS_SIZE);
            Path staging = plugin.stagingPath("opts");
            VolumeCapability bad = mount(fs, VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER, flags);

            StatusRuntimeException refused = assertRefused(Status.Code.INVALID_ARGUMENT, plugin,
                    stage("opts", loop.device(), staging, bad));
            assertBlank(loop.device());
            String message = refused.getStatus().getDescription();
            assertTrue(message.contains("mount option " + name + (value == null ? "=" : "")), message);
            if (value != null) {
                assertFalse(message.contains(value), "the caller's value is never quoted: " + message);
            }
            assertNoRecords(plugin);
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());

            String other = fs.equals("ext4") ? "xfs" : "ext4";
            plugin.client().node().nodeStageVolume(stage("opts", loop.device(), staging, mount(other)));
            assertMountOf(plugin, staging, loop);
            plugin.client().node().nodeUnstageVolume(unstage("opts", staging));
            assertNoRecords(plugin);
        }
    }

    /**
     * An option every check here lets through and the kernel still refuses (ext4's journal_async_commit is
     * refused in data=ordered mode, the default): the refusal comes after our mkfs, and undoes it, so the retry
     * asking for the other filesystem stages instead of being refused for ever as "holding ext4".
     */
    @Test
    void aRefusalAfterOurFormatUndoesItAndARetryWithTheOtherFilesystemStages() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("kernelno", XFS_SIZE);
            Path staging = plugin.stagingPath("kernelno");
            VolumeCapability bad = mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
                    "journal_async_commit");

            StatusRuntimeException refused = assertRefused(Status.Code.INVALID_ARGUMENT, plugin,
                    stage("kernelno", loop.device(), staging, bad));
            assertTrue(refused.getStatus().getDescription().contains("EINVAL"), refused.getMessage());
            assertBlank(loop.device());
            assertNoRecords(plugin);
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());

            plugin.client().node().nodeStageVolume(stage("kernelno", loop.device(), staging, mount("xfs")));
            assertMountOf(plugin, staging, loop);
            var blkid = new ProcessCommandRunner().run(Command.of("blkid", "-p", "-o", "value", "-s", "TYPE",
                    loop.device().toString()));
            assertEquals("xfs", blkid.stdout().strip());
            plugin.client().node().nodeUnstageVolume(unstage("kernelno", staging));
            assertNoRecords(plugin);
        }
    }

    @Test
    void aReStageNamingAnotherDeviceIsAlreadyExistsAndTheFirstStaysMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice staged = plugin.newLoopDevice("staged", SIZE);
            LoopDevice other = plugin.newLoopDevice("other", SIZE);
            Path staging = plugin.stagingPath("vol");
            plugin.client().node().nodeStageVolume(stage("vol", staged.device(), staging, mount("ext4")));

            StatusRuntimeException refused = assertRefused(Status.Code.ALREADY_EXISTS, plugin,
                    stage("vol", other.device(), staging, mount("ext4")));
            assertTrue(refused.getStatus().getDescription().contains("devicePath"), refused.getMessage());
            assertMountOf(plugin, staging, staged);
            assertEquals(1, recordCount(plugin), "the staged volume's record stays");
            assertArrayEquals(new byte[1 << 16], head(other.device()), "the other device was never formatted");

            plugin.client().node().nodeUnstageVolume(unstage("vol", staging));
            assertNoRecords(plugin);
        }
    }

    private static StatusRuntimeException assertRefused(Status.Code code, PluginHarness plugin,
                                                        NodeStageVolumeRequest request) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                () -> plugin.client().node().nodeStageVolume(request));
        assertEquals(code, e.getStatus().getCode(), e.getMessage());
        return e;
    }

    /** The staging path is a mount of exactly this loop device. */
    private static void assertMountOf(PluginHarness plugin, Path staging, LoopDevice loop) throws IOException {
        DeviceNumber device = plugin.host().mounter().stat(loop.device()).rdev();
        assertTrue(plugin.host().mounter().isMountPoint(staging), staging + " is mounted");
        assertEquals(device, plugin.host().mounter().stat(staging).device(), staging + " holds " + loop.device());
    }

    private static void assertNoRecords(PluginHarness plugin) throws IOException {
        assertEquals(List.of(), records(plugin), "no staging record (nor temp file) is left");
    }

    private static int recordCount(PluginHarness plugin) throws IOException {
        return records(plugin).size();
    }

    private static List<Path> records(PluginHarness plugin) throws IOException {
        try (Stream<Path> files = Files.list(plugin.stateDir().resolve("volumes"))) {
            return files.toList();
        }
    }

    /** As the node's probe sees a blank device: blkid finds nothing and the first MiB is zeros. */
    private static void assertBlank(Path device) throws IOException {
        byte[] head = new byte[1 << 20];
        try (RandomAccessFile in = new RandomAccessFile(device.toFile(), "r")) {
            in.readFully(head);
        }
        assertArrayEquals(new byte[1 << 20], head, device + ": the first MiB is zeros");
        assertEquals(2, new ProcessCommandRunner().run(Command.of("blkid", "-p", device.toString())).exitCode(),
                device + ": blkid finds nothing");
    }

    private static byte[] head(Path device) throws IOException {
        byte[] head = new byte[1 << 16];
        try (RandomAccessFile in = new RandomAccessFile(device.toFile(), "r")) {
            in.readFully(head);
        }
        return head;
    }
}
