package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * kubelet sends a context only where SELinux runs, but a PV's mountOptions can carry one anywhere: on a kernel
 * that does not run SELinux the filesystem itself gets the option and refuses it (EINVAL). The stage is then
 * INVALID_ARGUMENT naming the option, after the blank device was formatted: that format is undone, nothing is
 * left, and the retry without the context stages. (The VM tier's selinux boot covers a kernel that runs it.)
 */
@Tag("host")
class SelinuxContextWithoutSelinuxHostTest {

    private static final long XFS_SIZE = 320L << 20;
    private static final String KUBELET_CONTEXT = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs"})
    void aContextIsInvalidArgumentLeavingTheDeviceBlankAndTheRetryWithoutItStages(String fs) throws Exception {
        // selinuxfs is there exactly when the kernel runs SELinux: this machine's does not.
        assumeFalse(Files.exists(Path.of("/sys/fs/selinux/enforce")), "this kernel runs SELinux");
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("ctx-" + fs, XFS_SIZE);
            Path staging = plugin.stagingPath("ctx-" + fs);
            VolumeCapability labelled = mount(fs, VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
                    KUBELET_CONTEXT);

            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeStageVolume(stage("ctx-" + fs, loop.device(), staging, labelled)));

            assertEquals(Status.Code.INVALID_ARGUMENT, refused.getStatus().getCode(), refused.getMessage());
            String message = refused.getStatus().getDescription();
            assertTrue(message.contains("[context=]") && message.contains("EINVAL")
                    && message.contains("needs SELinux running on the node"), message);
            assertEquals(2, new ProcessCommandRunner().run(Command.of("blkid", "-p", loop.device().toString()))
                    .exitCode(), "blkid finds nothing: the refused stage took its own format off");
            try (Stream<Path> records = Files.list(plugin.stateDir().resolve("volumes"))) {
                assertEquals(0, records.count(), "no staging record is left");
            }
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());

            plugin.client().node().nodeStageVolume(stage("ctx-" + fs, loop.device(), staging, mount(fs)));
            assertTrue(plugin.host().mounter().isMountPoint(staging), staging + " is mounted");
            plugin.client().node().nodeUnstageVolume(unstage("ctx-" + fs, staging));
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());
        }
    }
}
