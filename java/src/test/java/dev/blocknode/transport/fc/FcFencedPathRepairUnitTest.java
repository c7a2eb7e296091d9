package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.PrType;
import dev.blocknode.testing.FakeScsiTarget;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.san.LunAttacher;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FC path repair of a FENCED volume, against a fabricated node (as {@link FcPathRepairUnitTest}: map mpatha over
 * sdb and sdc, port 2 lost past dev_loss_tmo) and the fake SCSI target behind its disks, each disk one I_T nexus.
 * The volume is reserved by this node (type 5: only registered nexuses may write) and renewed once, so the LUN holds
 * this node's key at generation 1 while the record still says generation 0. The disk that returns behind port 2,
 * sdd, is a nexus without a registration (a new login the target keeps no registration for, or a new target
 * port): a write down it before it is registered would meet a RESERVATION CONFLICT.
 */
class FcFencedPathRepairUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String TARGET = "0x500601603ba0415a";
    private static final ScsiAddress PATH_1 = new ScsiAddress(1, 0, 0, 3);
    private static final ScsiAddress PATH_2 = new ScsiAddress(2, 0, 1, 3);
    private static final AttachRequest VOLUME = new AttachRequest("vol-fc",
            Map.of("targetWWNs", TARGET, "lun", "3"), Map.of(), Secrets.NONE);
    private static final String RETURNED = "a2-returned";
    private static final FenceKey OURS = FenceKey.forNode("node-a");
    private static final FenceKey THEIRS = FenceKey.forNode("node-b");
    private static final int REGISTER_AND_IGNORE = 0x06;

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private final FakeScsiTarget target = new FakeScsiTarget();
    private FcTransport transport;
    private Attachment staged;
    private FenceKey recorded;
    private FenceKey current;

    @BeforeEach
    void stageFencedOnTwoPathsThenLosePortTwo() throws Exception {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        ManualClock clock = new ManualClock();
        transport = new FcTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(),
                new RecordingBlockDevices(sysfs.paths())).withScsi(target), sysfs, clock.waiter(), () -> true,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)));
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
        target.path(dev("sdb"), "a1", new DeviceNumber(8, 16)).path(dev("sdc"), "a2", new DeviceNumber(8, 32))
                .path(dev("sdd"), RETURNED, new DeviceNumber(8, 48));
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        staged = transport.attach(VOLUME);
        Fencing fencing = transport.fencing().orElseThrow();
        recorded = assertInstanceOf(Fencing.Held.class, fencing.acquire(VOLUME.volumeId(), staged, OURS)).key();
        current = assertInstanceOf(Fencing.Renewed.class, fencing.renew(VOLUME.volumeId(), staged, recorded)).key();
        assertNotEquals(recorded, current);
        commands.assertAllConsumed();
        sysfs.loseRemotePort(2, 0, 1);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_2, "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private Path dev(String name) {
        return sysfs.paths().dev().resolve(name);
    }

    private RepairedPaths repair() throws Exception {
        return repairs().repair(VOLUME, staged, Optional.of(recorded));
    }

    private boolean anyOutThrough(String nexus) {
        return target.log().stream().anyMatch(s -> s.nexus().equals(nexus) && s.opcode() == 0x5f);
    }

    /** Node B registers and preempts this node's key: the takeover the fencing protocol makes after a node died. */
    private void nodeBTakesTheLun() {
        LunPath b = new LunPath(Path.of("/dev/sd-b1"), Wwid.naa(NAA));
        target.path(b.device(), "b1");
        PersistentReservations pr = new PersistentReservations(target, target.check(), Duration.ofSeconds(10));
        try {
            pr.registerIgnoringExisting(b, THEIRS.value());
            pr.preempt(b, THEIRS.value(), current.value(), PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, false);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void theReturnedPathIsRegisteredWithTheHeldKeyBeforeMultipathdTakesIt() throws Exception {
        AtomicReference<Optional<Long>> keyWhenAdded = new AtomicReference<>();
        AtomicReference<Boolean> writableWhenAdded = new AtomicReference<>();
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> {
            keyWhenAdded.set(Optional.ofNullable(target.registrations().get(RETURNED)));
            writableWhenAdded.set(target.writeAllowed(RETURNED));
            sysfs.addSlave("dm-0", "sdd");
        });
        assertFalse(target.writeAllowed(RETURNED), "unregistered, its writes would fail at the storage");

        RepairedPaths repair = repair();

        assertEquals(List.of("2:0:1:3=sdd"), repair.restored(), repair.toString());
        assertEquals(Optional.of(current.value()), keyWhenAdded.get(),
                "registered before multipathd was asked, with the key the reservation holds (not the record's older"
                        + " generation), so the next renewal finds it where it expects");
        assertTrue(writableWhenAdded.get(), "its first write can only come after the add, and is allowed");
        assertEquals(Optional.of(current.value()), target.holderKey(), "the reservation is untouched");
    }

    @Test
    void aLunTakenByAnotherNodeGetsNoRegistrationAndNoPathBack() throws Exception {
        nodeBTakesTheLun();

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored());
        assertEquals(1, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().get(0).contains("reserved by node key " + THEIRS.toString().substring(0, 12)),
                repair.failed().get(0));
        assertFalse(anyOutThrough(RETURNED), "nothing registered through the returned path");
        assertFalse(target.writeAllowed(RETURNED));
        assertTrue(sysfs.hasDisk("sdd"), "the verified disk is left where it is, outside the map");
        // no multipath command was scripted: multipathd was never asked to take it
    }

    @Test
    void aPathThatRefusesTheRegistrationIsNotAdded() throws Exception {
        target.refusesRegistrations(RETURNED);

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored());
        assertEquals(1, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().get(0).startsWith("2:0:1:3=sdd: not added: it did not take this node's"
                + " reservation key"), repair.failed().get(0));
        assertFalse(target.registrations().containsKey(RETURNED));
    }

    @Test
    void aTakeoverBetweenTheCheckAndTheRegistrationTakesTheRegistrationBack() throws Exception {
        target.beforeOut(RETURNED, REGISTER_AND_IGNORE, seen -> nodeBTakesTheLun());

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored());
        assertTrue(repair.failed().get(0).contains("after registering"), repair.toString());
        assertFalse(target.registrations().containsKey(RETURNED), "this node's returned path is unregistered again");
        assertFalse(target.writeAllowed(RETURNED));
    }
}
