package dev.blocknode.lifecycle;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An mkfs cut short (killed by its time limit, failed, or the plugin died under it) leaves a device that
 * is neither blank nor a filesystem. Without a record of it, "never format over data" would refuse that
 * volume forever; the record says the plugin began formatting a blank device, so the device is blanked again (at
 * once when mkfs failed, by the retry when the plugin died), and the retry formats it as the blank device it was.
 */
@Tag("host")
class InterruptedFormatHostTest {

    private static final long SIZE = 320L << 20;

    /** Real commands, except that the first mkfs only scribbles on the device and then "times out". */
    private static final class MkfsCutShort implements CommandRunner {
        private final CommandRunner real = new ProcessCommandRunner();
        private final List<String> mkfsRuns = Collections.synchronizedList(new ArrayList<>());

        @Override
        public CommandResult run(Command command) throws CommandException {
            if (!command.program().startsWith("mkfs.")) {
                return real.run(command);
            }
            mkfsRuns.add(command.display());
            if (mkfsRuns.size() > 1) {
                return real.run(command);
            }
            String device = command.argv().get(command.argv().size() - 1);
            byte[] partial = new byte[1 << 20];
            new Random(7).nextBytes(partial);
            try (RandomAccessFile out = new RandomAccessFile(device, "rw")) {
                out.write(partial); // what a killed mkfs may leave: neither blank nor a filesystem
                out.getFD().sync();
            } catch (java.io.IOException e) {
                throw new IllegalStateException("cannot scribble on " + device, e);
            }
            throw new CommandException(command, null, command.display() + " timed out after 300000 ms", null);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs"})
    void aRetryFinishesTheFormatAndTheVolumeIsUsable(String fs) throws Exception {
        MkfsCutShort commands = new MkfsCutShort();
        Host real = Host.real();
        Host host = new Host(real.paths(), commands, real.mounter(), real.blockDevices());
        try (PluginHarness plugin = PluginHarness.start(host)) {
            LoopDevice loop = plugin.newLoopDevice("cut", SIZE);
            Path staging = plugin.stagingPath("cut");
            Path target = plugin.targetPath("pod", "cut");

            StatusRuntimeException first = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeStageVolume(stage("cut", loop.device(), staging, mount(fs))));
            assertEquals(Status.Code.INTERNAL, first.getStatus().getCode(), first.getMessage());
            assertTrue(first.getStatus().getDescription().contains("timed out"), first.getMessage());
            String probe = new ProcessCommandRunner().run(Command.of("blkid", "-p", loop.device().toString())).stdout();
            assertTrue(probe.isBlank(), "the cut-short mkfs left no filesystem signature: " + probe);
            byte[] head = new byte[1 << 20];
            try (RandomAccessFile in = new RandomAccessFile(loop.device().toFile(), "r")) {
                in.readFully(head);
            }
            assertArrayEquals(new byte[1 << 20], head, "what the failed mkfs wrote is taken off: blank again");

            plugin.client().node().nodeStageVolume(stage("cut", loop.device(), staging, mount(fs)));
            assertEquals(2, commands.mkfsRuns.size(), commands.mkfsRuns.toString());
            assertTrue(!commands.mkfsRuns.get(1).contains(" -F ") && !commands.mkfsRuns.get(1).contains(" -f "),
                    "the device is blank again, so the second format is a blank device's, never forced: "
                            + commands.mkfsRuns.get(1));

            plugin.client().node().nodePublishVolume(publish("cut", staging, target, mount(fs), false));
            byte[] data = new byte[1 << 20];
            new Random(11).nextBytes(data);
            Files.write(target.resolve("data"), data);
            plugin.client().node().nodeUnpublishVolume(unpublish("cut", target));
            plugin.client().node().nodeUnstageVolume(unstage("cut", staging));

            // Formatted once and for all: a later stage mounts what is there, never formats again.
            plugin.client().node().nodeStageVolume(stage("cut", loop.device(), staging, mount(fs)));
            assertEquals(2, commands.mkfsRuns.size(), commands.mkfsRuns.toString());
            plugin.client().node().nodePublishVolume(publish("cut", staging, target, mount(fs), false));
            assertArrayEquals(data, Files.readAllBytes(target.resolve("data")));
            plugin.client().node().nodeUnpublishVolume(unpublish("cut", target));
            plugin.client().node().nodeUnstageVolume(unstage("cut", staging));
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());
        }
    }
}
