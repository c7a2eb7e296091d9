package dev.blocknode.transport.fc;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.san.LunAttacher;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FC transport's path repair against a fabricated node: a volume staged through two HBAs (host1, host2), each
 * seeing the array's target port through one remote port, under multipathd's map mpatha over sdb and sdc. Port 2 is
 * then lost for longer than its dev_loss_tmo: the kernel deletes sdc, and with scsi_mod.scan=manual nothing scans
 * the LUN back when the port returns. That is what the repair is for.
 */
class FcPathRepairUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String OTHER_NAA = "600a098038303053453f463045727a41";
    private static final String TARGET = "0x500601603ba0415a";
    private static final ScsiAddress PATH_1 = new ScsiAddress(1, 0, 0, 3);
    private static final ScsiAddress PATH_2 = new ScsiAddress(2, 0, 1, 3);
    private static final Duration PATHS = Duration.ofSeconds(15);
    private static final AttachRequest VOLUME = new AttachRequest("vol-fc",
            Map.of("targetWWNs", TARGET, "lun", "3"), Map.of(), Secrets.NONE);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ManualClock clock;
    private FcTransport transport;
    private Attachment staged;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void stageOnTwoPaths() throws Exception {
        Metrics.addRegistry(registry);
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        clock = new ManualClock();
        transport = new FcTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(),
                new RecordingBlockDevices(sysfs.paths())), sysfs, clock.waiter(), () -> true,
                new LunAttacher.Timeouts(PATHS, Duration.ofSeconds(30), Duration.ofSeconds(60)));
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        staged = transport.attach(VOLUME);
        commands.assertAllConsumed();
        sysfs.loseRemotePort(2, 0, 1); // past dev_loss_tmo: sdc deleted, the map serves on sdb alone
    }

    @AfterEach
    void everyScriptedCommandRan() {
        Metrics.removeRegistry(registry);
        commands.assertAllConsumed();
    }

    private void portTwoReturnsPresenting(String naa) throws IOException {
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_2, "sdd", new DeviceNumber(8, 48), "naa." + naa, null);
    }

    private List<String> writesSinceStage() {
        return sysfs.writeLog().stream().skip(2).toList(); // the stage's two scans
    }

    private double repairs(String outcome) {
        return registry.get(PathRepairs.NAME).tags("transport", "fc", "kind", "lun_path", "outcome",
                outcome).counter().count();
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void aPortBackOnlineGetsItsLunScannedCheckedAndAddedToTheMap() throws Exception {
        assertFalse(repairs().mayRepair(VOLUME, staged), "port 2 still gone: nothing a repair could do");
        portTwoReturnsPresenting(NAA);
        assertTrue(repairs().mayRepair(VOLUME, staged), "port 2 back without its disk: worth a repair");
        assertEquals(List.of(), writesSinceStage(), "the look scans nothing");
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));
        double before = repairs("restored");

        RepairedPaths repair = repairs().repair(VOLUME, staged, Optional.empty());

        assertEquals(List.of("2:0:1:3=sdd"), repair.restored());
        assertFalse(repair.failedAny(), repair.toString());
        assertEquals(List.of("class/scsi_host/host2/scan=0 1 3"), writesSinceStage(),
                "exactly the lost path's H:C:T:L is scanned: nothing behind port 1, no wildcard");
        assertEquals(1, repairs("restored") - before);
        assertEquals("1:0:0:3=sdb,2:0:1:3=sdd", repair.attachment().orElseThrow().get("paths"),
                "the record is to name the returned path's new disk");
        assertEquals("mpatha", repair.attachment().orElseThrow().get("multipathMap"));

        assertFalse(repairs().mayRepair(VOLUME, staged), "both paths in the map: nothing worth holding it for");
        assertEquals(RepairedPaths.NONE, repairs().repair(VOLUME, staged, Optional.empty()),
                "both paths in the map: nothing to do");
        assertEquals(1, writesSinceStage().size(), "and nothing scanned again");
    }

    @Test
    void anotherLunAtTheReturnedPortsNumberIsDeletedAgainAndNeverAdded() throws Exception {
        portTwoReturnsPresenting(OTHER_NAA);
        double before = repairs("wrong_lun");

        RepairedPaths repair = repairs().repair(VOLUME, staged, Optional.empty());

        assertEquals(List.of(), repair.restored());
        assertEquals(1, repair.wrongLun().size(), repair.toString());
        assertTrue(repair.wrongLun().get(0).contains("2:0:1:3=sdd is LUN 3" + OTHER_NAA + ", not " + WWID),
                repair.wrongLun().get(0));
        assertFalse(sysfs.hasDisk("sdd"), "the wrong LUN's disk is deleted again");
        assertTrue(sysfs.hasDisk("sdb"), "the serving path is untouched");
        assertEquals(List.of("class/scsi_host/host2/scan=0 1 3"), writesSinceStage().subList(0, 1));
        assertTrue(writesSinceStage().get(1).endsWith("sdd/device/delete=1"), writesSinceStage().toString());
        assertEquals(1, repairs("wrong_lun") - before);
        // no multipath command was scripted: multipathd was never asked to take it
    }

    @Test
    void withEveryPortDownNothingIsDone() throws Exception {
        sysfs.loseRemotePort(1, 0, 0);

        RepairedPaths repair = repairs().repair(VOLUME, staged, Optional.empty());

        assertTrue(repair.waiting().isPresent(), repair.toString());
        assertFalse(repair.actedOn());
        assertEquals(List.of(), writesSinceStage());
    }

    @Test
    void withNoPathServingAReturnedPortIsNotScanned() throws Exception {
        sysfs.setState("sdb", "transport-offline");
        portTwoReturnsPresenting(NAA);

        RepairedPaths repair = repairs().repair(VOLUME, staged, Optional.empty());

        assertTrue(repair.waiting().orElseThrow().startsWith("no path of multipath map mpatha (dm-0, " + WWID
                + ") serves I/O; nothing is scanned or removed"), repair.waiting().toString());
        assertEquals(List.of(), writesSinceStage());
        assertTrue(sysfs.hasDisk("sdb"), "the failed path is never removed");
    }

    @Test
    void aPortThatComesBackWithoutTheLunIsAFailureToRetryLater() throws Exception {
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.unpresentLun(PATH_2); // unmapped from that port meanwhile

        RepairedPaths repair = repairs().repair(VOLUME, staged, Optional.empty());

        assertEquals(List.of(), repair.restored());
        assertEquals(List.of("2:0:1:3: no disk appeared within 15 s of its scan"), repair.failed());
        assertTrue(repair.failedAny());
        assertEquals(PATHS, clock.elapsed(), "the wait for the disk is bounded by the stage's own");
    }

    @Test
    void aVolumeAttachedByWwidAloneScannedNothingAndIsNotScanned() throws Exception {
        AttachRequest byWwid = new AttachRequest("vol-fc", Map.of("wwids", WWID), Map.of(), Secrets.NONE);
        portTwoReturnsPresenting(NAA);
        assertEquals(RepairedPaths.NONE, repairs().repair(byWwid, staged, Optional.empty()));
        assertEquals(List.of(), writesSinceStage());
    }
}
