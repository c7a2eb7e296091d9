package dev.blocknode.repair;

import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.host.Host;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.StagedIscsiNode;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.iscsi.IscsiAdm;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.iscsi.NodeRecordFiles;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;
import dev.blocknode.volume.OperationGuard;
import dev.blocknode.volume.StagedForRepair;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.io.TempDirFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The repair loop and the real iSCSI transport over a node with 100 healthy staged volumes, fabricated as a stage
 * leaves it ({@link StagedIscsiNode}): a pass looks at every volume, runs no command, writes nothing to sysfs, waits
 * for nothing and sweeps nothing. What figure k of the benchmark (test-e2e/bench) times; no time is asserted here.
 */
class HealthyIscsiPassUnitTest {

    private static final int VOLUMES = 100;

    /**
     * In memory where the machine has it: the stage of 100 volumes fsyncs some 1,000 journal entries and records,
     * which took 45 s on a loaded machine's disk and takes a second or two on tmpfs. Removed after each test.
     */
    @TempDir(factory = InMemoryWhereThereIsOne.class)
    Path temp;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    /** /dev/shm (tmpfs on Linux) when it is a writable directory, else the JVM's temp dir. */
    static final class InMemoryWhereThereIsOne implements TempDirFactory {
        @Override
        public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext extension)
                throws IOException {
            Path shm = Path.of("/dev/shm");
            return Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, "healthy-pass")
                    : Files.createTempDirectory("healthy-pass");
        }
    }

    @AfterEach
    void removeRegistry() {
        Metrics.removeRegistry(registry);
    }

    /** A target per volume: 200 sessions, the layout whose looks cost most (one shared target is figure k's other). */
    @Test
    void aPassOverOneTargetPerVolumeLooksAtEveryVolumeAndRunsNothing() throws Exception {
        passesRunNothing(StagedIscsiNode.stage(temp, VOLUMES, StagedIscsiNode.Targets.ONE_PER_VOLUME));
    }

    private void passesRunNothing(StagedIscsiNode node) throws Exception {
        HostPaths paths = node.sysfs().paths();
        // As the plugin builds it, but for the daemon: MultipathDaemon.of asks "multipathd show daemon" once, in the
        // background, when the plugin starts; a pass over healthy volumes never asks it.
        IscsiTransport transport = IscsiTransport.over(
                new Host(paths, node.commands(), new QueryOnlyMounter(), new RecordingBlockDevices(paths)),
                new IscsiAdm(node.commands()), new NodeRecordFiles(node.iscsiDatabase()), SysfsWriter.DIRECT,
                node.waiter(), MultipathDaemon.running(true), LunAttacher.Timeouts.DEFAULTS)
                .journals(LoginJournal.in(node.stateDir()), ScanJournal.in(node.stateDir()))
                .repairInterval(Duration.ofSeconds(30)).build();
        PathRepairLoop loop = new PathRepairLoop(new StagedForRepair(node.store(), new OperationGuard()),
                new Transports(List.of(transport)), Duration.ofSeconds(30), System::nanoTime);
        int writes = node.sysfs().writeLog().size();
        int pauses = node.pauses();
        int logins = LoginJournal.in(node.stateDir()).all().size();
        int scans = ScanJournal.in(node.stateDir()).all(IscsiTransport.NAME).size();
        Metrics.addRegistry(registry);

        loop.meteredPass();
        loop.meteredPass();

        assertEquals(List.of(), node.commandsSinceStage(), "a healthy volume needs no iscsiadm, multipath(d)");
        node.commands().assertAllConsumed();
        assertEquals(2.0 * VOLUMES, registry.get(RepairLoopCost.LOOKS).counter().count(), "every volume, each pass");
        assertEquals(writes, node.sysfs().writeLog().size(), "no scan, rescan or delete");
        assertEquals(pauses, node.pauses(), "no wait");
        assertEquals(List.of(), loop.keptOrphans());
        assertEquals(logins, LoginJournal.in(node.stateDir()).all().size(), "every login still proven");
        assertEquals(VOLUMES * 2, ScanJournal.in(node.stateDir()).all(IscsiTransport.NAME).size(),
                "every scan still proven");
        assertEquals(VOLUMES * 2, scans);
    }
}
