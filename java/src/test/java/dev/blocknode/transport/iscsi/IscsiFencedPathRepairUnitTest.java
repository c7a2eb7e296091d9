package dev.blocknode.transport.iscsi;

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
import dev.blocknode.testing.ScriptedIscsiadm;
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

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
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
 * The iSCSI path repair of a FENCED volume, against a fabricated node, a scripted iscsiadm (as
 * {@link IscsiPathRepairUnitTest}: LUN 3 through two portals, map mpatha over sdb and sdc, then session 2 gone behind
 * the plugin's back) and the fake SCSI target behind the disks, each disk one I_T nexus. The volume is reserved by
 * this node (type 5: only registered nexuses may write) and renewed once, so the LUN holds this node's key at
 * generation 1 while the record still says generation 0. The repair logs portal 2 in again: the new session is a new
 * I_T nexus, whose disk sdd the target keeps no registration for, so a write down it before it is registered would
 * meet a RESERVATION CONFLICT.
 */
class IscsiFencedPathRepairUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String[] PORTALS = {"127.0.0.1:3260", "127.0.0.2:3260"};
    private static final AttachRequest VOLUME = new AttachRequest("vol-3", Map.of("targetPortal", PORTALS[0],
            "portals", PORTALS[1], "iqn", IQN, "lun", "3"), Map.of(), Secrets.NONE);
    private static final String NEW_SESSION = "session3";
    private static final FenceKey OURS = FenceKey.forNode("node-a");
    private static final FenceKey THEIRS = FenceKey.forNode("node-b");
    private static final int PERSISTENT_RESERVE_OUT = 0x5f;

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ScriptedIscsiadm iscsiadm;
    private final FakeScsiTarget target = new FakeScsiTarget();
    private IscsiTransport transport;
    private Attachment staged;
    private FenceKey recorded;
    private FenceKey current;
    private int commandsAtLoss;

    @BeforeEach
    void stageFencedOnTwoPortalsThenLoseSessionTwo() throws Exception {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        Path database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        ManualClock clock = new ManualClock();
        transport = IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths()))
                        .withScsi(target),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), () -> true,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .clock(() -> Duration.between(Instant.EPOCH, clock.instant()).toNanos()).build();
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
        target.path(dev("sdb"), "session1", new DeviceNumber(8, 16)).path(dev("sdc"), "session2",
                new DeviceNumber(8, 32)).path(dev("sdd"), NEW_SESSION, new DeviceNumber(8, 48));
        for (int i = 0; i < 2; i++) {
            iscsiadm.expectRecordCreated(PORTALS[i]);
            iscsiadm.expectLogin(PORTALS[i], i + 1, i + 3);
        }
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
        // Session 2 is gone (iscsiadm -u behind the plugin's back): the kernel deleted sdc with host4.
        sysfs.removeDisk("sdc");
        sysfs.removeIscsiSession(2, 4);
        commandsAtLoss = commands.commandLines().size();
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private Path dev(String name) {
        return sysfs.paths().dev().resolve(name);
    }

    /** The repair logs portal 2 in again: session 3 on host5, where the LUN shows as sdd once scanned. */
    private void portalTwoLogsInAgain() {
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5);
    }

    private RepairedPaths repair() throws Exception {
        return repairs().repair(VOLUME, staged, Optional.of(recorded));
    }

    private List<String> commandsSinceLoss() {
        List<String> lines = commands.commandLines();
        return lines.subList(commandsAtLoss, lines.size());
    }

    private boolean anyOutThrough(String nexus) {
        return target.log().stream().anyMatch(s -> s.nexus().equals(nexus) && s.opcode() == PERSISTENT_RESERVE_OUT);
    }

    /** Node B registers and preempts this node's key: the takeover the fencing protocol makes after a node died. */
    private void nodeBTakesTheLun() throws IOException {
        LunPath b = new LunPath(Path.of("/dev/sd-b1"), Wwid.naa(NAA));
        target.path(b.device(), "b1");
        PersistentReservations pr = new PersistentReservations(target, target.check(), Duration.ofSeconds(10));
        pr.registerIgnoringExisting(b, THEIRS.value());
        pr.preempt(b, THEIRS.value(), current.value(), PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, false);
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void theNewSessionsDiskIsRegisteredWithTheHeldKeyBeforeMultipathdIsAskedToAddIt() throws Exception {
        portalTwoLogsInAgain();
        List<String> order = new ArrayList<>();
        target.beforeOut(NEW_SESSION, 0x06, seen -> order.add("register " + FenceKey.hex(seen.serviceActionKey())));
        AtomicReference<Boolean> writableWhenAdded = new AtomicReference<>();
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> {
            order.add("add sdd");
            writableWhenAdded.set(target.writeAllowed(NEW_SESSION));
            sysfs.addSlave("dm-0", "sdd");
        });
        assertTrue(repairs().mayRepair(VOLUME, staged));

        RepairedPaths repair = repair();

        assertEquals(List.of("5:0:0:3=sdd"), repair.restored(), repair.toString());
        assertFalse(repair.failedAny(), repair.toString());
        assertEquals(List.of("register " + FenceKey.hex(current.value()), "add sdd"), order,
                "registered through the new session with the key the reservation holds (not the record's older"
                        + " generation), and only then handed to multipathd");
        assertTrue(writableWhenAdded.get(), "its first write can only come after the add, and is allowed");
        assertEquals(Long.valueOf(current.value()), target.registrations().get(NEW_SESSION), "the new nexus holds it");
        assertEquals(Optional.of(current.value()), target.holderKey(), "the reservation is untouched");
        assertEquals("3:0:0:3=sdb,5:0:0:3=sdd", repair.attachment().orElseThrow().get("paths"));
        assertTrue(commandsSinceLoss().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")),
                commandsSinceLoss().toString());
    }

    @Test
    void aLunHeldByAnotherTagGetsNoRegistrationAndNoPathBack() throws Exception {
        nodeBTakesTheLun();
        portalTwoLogsInAgain();

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored());
        assertEquals(1, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().get(0).startsWith("5:0:0:3=sdd: not added: the LUN is reserved by node key "),
                repair.failed().get(0));
        assertFalse(anyOutThrough(NEW_SESSION), "nothing registered through the new session");
        assertFalse(target.writeAllowed(NEW_SESSION));
        assertTrue(sysfs.hasDisk("sdd"), "the verified disk is left where it is, outside the map");
        assertTrue(commandsSinceLoss().stream().noneMatch(l -> l.startsWith("multipath")),
                "multipathd was never asked to take it: " + commandsSinceLoss());
    }

    private static final int PERSISTENT_RESERVE_IN = 0x5e;
    private static final int READ_RESERVATION = 0x01;
    private static final int REGISTER_AND_IGNORE_EXISTING_KEY = 0x06;
    private static final String PORTAL_1_SESSION = "session4";

    /**
     * Session 1 is gone too (every session of the volume logged out behind the plugin): the map has no path left.
     * The repair logs both portals in again: portal 1 as session 4 on host6 (sde), portal 2 as session 3 on host5
     * (sdd), two new I_T nexuses the target holds no registration for.
     */
    private void everySessionGoneThenBothLogInAgain() throws IOException {
        sysfs.removeDisk("sdb");
        sysfs.removeIscsiSession(1, 3);
        sysfs.presentLun(new ScsiAddress(6, 0, 0, 3), "sde", new DeviceNumber(8, 64), "naa." + NAA, null);
        target.path(dev("sde"), PORTAL_1_SESSION, new DeviceNumber(8, 64));
        iscsiadm.expectLogin(PORTALS[0], 4, 6);
        portalTwoLogsInAgain();
    }

    /** The target's log as "IN|OUT nexus action", from {@code from} on. */
    private List<String> prCommands(int from) {
        return target.log().subList(from, target.log().size()).stream()
                .filter(c -> c.opcode() == PERSISTENT_RESERVE_IN || c.opcode() == PERSISTENT_RESERVE_OUT)
                .map(c -> (c.opcode() == PERSISTENT_RESERVE_IN ? "IN " : "OUT ") + c.nexus() + " " + c.serviceAction())
                .toList();
    }

    private void assertNothingLoggedOutOrAdded() {
        assertTrue(commandsSinceLoss().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")
                || l.startsWith("multipath")), "nothing logged out, multipathd never asked: " + commandsSinceLoss());
    }

    @Test
    void everySessionGoneTheReservationIsReadThroughTheNewDisksThenEachIsRegisteredThenAdded() throws Exception {
        everySessionGoneThenBothLogInAgain();
        int logAtLoss = target.log().size();
        AtomicReference<List<String>> prWhenAdded = new AtomicReference<>();
        AtomicReference<Boolean> writableWhenAdded = new AtomicReference<>();
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sde").succeeds("ok\n").andDo(c -> {
            prWhenAdded.set(prCommands(logAtLoss));
            writableWhenAdded.set(target.writeAllowed(PORTAL_1_SESSION) && target.writeAllowed(NEW_SESSION));
            sysfs.addSlave("dm-0", "sde");
        });
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));
        assertTrue(repairs().mayRepair(VOLUME, staged));

        RepairedPaths repair = repair();

        assertEquals(List.of("6:0:0:3=sde", "5:0:0:3=sdd"), repair.restored(), repair.toString());
        assertFalse(repair.failedAny(), repair.toString());
        String in = "IN " + PORTAL_1_SESSION + " " + READ_RESERVATION;
        assertEquals(List.of(in, "OUT " + PORTAL_1_SESSION + " " + REGISTER_AND_IGNORE_EXISTING_KEY,
                        "OUT " + NEW_SESSION + " " + REGISTER_AND_IGNORE_EXISTING_KEY, in), prWhenAdded.get(),
                "the reservation read through a new disk (no map path is left), both new nexuses registered, read"
                        + " again, and only then multipathd asked");
        assertTrue(writableWhenAdded.get(), "the queued writes go down registered paths only");
        assertEquals(Long.valueOf(current.value()), target.registrations().get(PORTAL_1_SESSION));
        assertEquals(Long.valueOf(current.value()), target.registrations().get(NEW_SESSION),
                "the key the reservation holds, not the record's older generation");
        assertEquals(Optional.of(current.value()), target.holderKey(), "the reservation is untouched");
        assertEquals("6:0:0:3=sde,5:0:0:3=sdd", repair.attachment().orElseThrow().get("paths"));
        assertTrue(commandsSinceLoss().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")),
                commandsSinceLoss().toString());
    }

    @Test
    void everySessionGoneALunHeldByAnotherTagGetsNoRegistrationAndNoPathBack() throws Exception {
        nodeBTakesTheLun();
        everySessionGoneThenBothLogInAgain();

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored(), repair.toString());
        assertEquals(2, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().stream().allMatch(f -> f.contains("not added: the LUN is reserved by node key "
                + FenceKey.hex(THEIRS.value()) + ", not this node's, before registering (read through ")), repair
                .toString());
        assertFalse(anyOutThrough(NEW_SESSION), "nothing registered through a new session");
        assertFalse(anyOutThrough(PORTAL_1_SESSION));
        assertFalse(target.writeAllowed(NEW_SESSION) || target.writeAllowed(PORTAL_1_SESSION));
        assertTrue(sysfs.hasDisk("sdd") && sysfs.hasDisk("sde"), "the verified disks are left, outside the map");
        assertNothingLoggedOutOrAdded();
    }

    @Test
    void everySessionGoneALunNotReservedAtAllGetsNoPathBack() throws Exception {
        target.restartWithoutReservations();
        everySessionGoneThenBothLogInAgain();

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored(), repair.toString());
        assertEquals(2, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().stream().allMatch(f -> f.contains("not added: the LUN is not reserved before"
                + " registering")), repair.toString());
        assertFalse(anyOutThrough(NEW_SESSION));
        assertFalse(anyOutThrough(PORTAL_1_SESSION));
        assertNothingLoggedOutOrAdded();
    }

    @Test
    void everySessionGoneAReservationThatCannotBeReadAddsNoPath() throws Exception {
        everySessionGoneThenBothLogInAgain();
        target.dead(PORTAL_1_SESSION, true);
        target.dead(NEW_SESSION, true);

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored(), repair.toString());
        assertEquals(2, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().stream().allMatch(f -> f.contains("not added: the LUN's reservation cannot be"
                + " read through any of its paths")), repair.toString());
        assertFalse(anyOutThrough(NEW_SESSION));
        assertFalse(anyOutThrough(PORTAL_1_SESSION));
        assertNothingLoggedOutOrAdded();
    }

    @Test
    void everySessionGoneATakeoverBetweenTheReadAndTheRegisterIsSeenAfterAndTheRegistrationsTakenBack()
            throws Exception {
        everySessionGoneThenBothLogInAgain();
        target.beforeOut(PORTAL_1_SESSION, REGISTER_AND_IGNORE_EXISTING_KEY, seen -> {
            try {
                nodeBTakesTheLun(); // after our first read said the LUN is ours, before our first REGISTER
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });

        RepairedPaths repair = repair();

        assertEquals(List.of(), repair.restored(), repair.toString());
        assertEquals(2, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().stream().allMatch(f -> f.contains("not added: the LUN is reserved by node key "
                + FenceKey.hex(THEIRS.value()) + ", not this node's, after registering")), repair.toString());
        assertFalse(target.registrations().containsKey(NEW_SESSION), "taken back: " + target.registrations());
        assertFalse(target.registrations().containsKey(PORTAL_1_SESSION), "taken back: " + target.registrations());
        assertFalse(target.writeAllowed(NEW_SESSION) || target.writeAllowed(PORTAL_1_SESSION));
        assertEquals(Optional.of(THEIRS.value()), target.holderKey(), "node B's reservation is untouched");
        assertNothingLoggedOutOrAdded();
    }
}
