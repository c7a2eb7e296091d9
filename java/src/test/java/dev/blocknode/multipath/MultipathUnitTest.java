package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.DeviceMapper.Removal;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.testing.FakeDeviceMapper;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.ScriptedCommandRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MultipathUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final LunIdentity LUN = new LunIdentity(Wwid.naa(NAA), List.of());

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ManualClock clock;
    private List<Path> mountPoints;
    private Multipath multipath;
    private FakeDeviceMapper deviceMapper;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(2, 0, 1, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        commands = new ScriptedCommandRunner();
        clock = new ManualClock();
        mountPoints = new ArrayList<>();
        useDeviceMapper(FakeDeviceMapper.unavailable());
    }

    /** The tests of the tools run without a usable control node; those of the ioctls give one here. */
    private void useDeviceMapper(FakeDeviceMapper fake) {
        deviceMapper = fake;
        multipath = new Multipath(commands, fake, new MultipathMaps(sysfs.paths()), clock.waiter(),
                device -> device.equals(new DeviceNumber(253, 0)) ? mountPoints : List.of());
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    // ---- assembly ------------------------------------------------------------------------------------

    @Test
    void withTheDaemonEachPathIsAddedAfterTheWwidIsRegistered() throws IOException {
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        MultipathMap map = multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30));
        assertEquals("mpatha", map.name());
        assertEquals(List.of("sdb", "sdc"), map.slaves());
        assertEquals(Duration.ZERO, clock.elapsed());
    }

    @Test
    void withoutTheDaemonMultipathBuildsTheMap() throws IOException {
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(4, WWID, WWID, List.of("sdb", "sdc")));
        MultipathMap map = multipath.assemble(LUN, List.of("sdb", "sdc"), false, Duration.ofSeconds(30));
        assertEquals("dm-4", map.kernelName());
    }

    @Test
    void anExistingCompleteMapNeedsNoCommand() throws IOException {
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        assertEquals("mpatha", multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30)).name());
    }

    @Test
    void onlyPathsMissingFromTheMapAreAdded() throws IOException {
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb"));
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n").andDo(c -> {
            sysfs.removeMap("dm-0");
            sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        });
        assertEquals(List.of("sdb", "sdc"),
                multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30)).slaves());
    }

    @Test
    void aMapThatAppearsLaterIsWaitedFor() throws IOException {
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("fail\n");
        commands.expect("multipathd", "add", "path", "sdc").fails(1, "fail");
        clock.schedule(Duration.ofSeconds(3), () -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        assertEquals("mpatha", multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30)).name());
        assertEquals(Duration.ofSeconds(3), clock.elapsed());
    }

    @Test
    void aPartialMapIsUsedAtTheDeadline() throws IOException {
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb")));
        commands.expect("multipathd", "add", "path", "sdc");
        MultipathMap map = multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30));
        assertEquals(List.of("sdb"), map.slaves());
        assertEquals(Duration.ofSeconds(30), clock.elapsed());
    }

    @Test
    void noMapAtTheDeadlineIsATimeoutNamingTheWwid() {
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipath", WWID).fails(1, "");
        WaitTimeoutException e = assertThrows(WaitTimeoutException.class,
                () -> multipath.assemble(LUN, List.of("sdb", "sdc"), false, Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("multipath map of " + WWID), e.getMessage());
        assertTrue(e.getMessage().contains("no map"), e.getMessage());
    }

    @Test
    void aToolThatTimesOutLeavesItToTheWaitForTheMap() throws IOException {
        commands.expect("multipath", "-a", WWID).timesOut();
        commands.expect("multipathd", "add", "path", "sdb").timesOut();
        commands.expect("multipathd", "add", "path", "sdc").timesOut();
        clock.schedule(Duration.ofSeconds(3), () -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        assertEquals("mpatha", multipath.assemble(LUN, List.of("sdb", "sdc"), true, Duration.ofSeconds(30)).name());
    }

    @Test
    void aMissingToolIsAnError() {
        commands.expect("multipath", "-a", WWID).throwing(c -> new CommandException(c, null, "cannot start multipath", null));
        assertThrows(CommandException.class,
                () -> multipath.assemble(LUN, List.of("sdb", "sdc"), false, Duration.ofSeconds(10)));
    }

    // ---- teardown ----------------------------------------------------------------------------------

    @Test
    void removeDisablesQueueingThenFlushes() throws IOException {
        MultipathMap map = map();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertFalse(sysfs.hasMap("dm-0"));
    }

    @Test
    void removeRetriesWhileTheMapIsInUse() throws IOException {
        MultipathMap map = map();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        for (int i = 0; i < 3; i++) {
            commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use");
        }
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertEquals(Duration.ofMillis(750), clock.elapsed());
    }

    @Test
    void removeGivesUpNamingHoldersAndMounts() throws IOException {
        MultipathMap map = map();
        sysfs.addDm(1, "vg0-data", "LVM-abc", List.of("dm-0"));
        mountPoints.add(Path.of("/var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use").anyTimes();
        MapInUseException e = assertThrows(MapInUseException.class,
                () -> multipath.remove(map, clock.instant().plusSeconds(10)));
        assertEquals(List.of("dm-1 (vg0-data)", "mounted at /var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"),
                e.users());
        assertTrue(e.getMessage().contains("in use by dm-1 (vg0-data)"), e.getMessage());
        assertTrue(e.getMessage().contains("multipath -f said: mpatha: map in use"), e.getMessage());
        assertEquals(Duration.ofSeconds(10), clock.elapsed());
        assertTrue(sysfs.hasMap("dm-0"));
    }

    // ---- removal through the control node ---------------------------------------------------------------

    @Test
    void removeThroughTheControlNodeRunsNoTool() throws IOException {
        MultipathMap map = map();
        useDeviceMapper(new FakeDeviceMapper().onRemove(name -> sysfs.removeMap("dm-0")));
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertEquals(List.of("message mpatha fail_if_no_path", "remove mpatha"), deviceMapper.calls());
        assertFalse(sysfs.hasMap("dm-0"));
        assertEquals(Duration.ZERO, clock.elapsed());
    }

    @Test
    void aBusyMapIsRemovedAgainUntilItGoes() throws IOException {
        MultipathMap map = map();
        useDeviceMapper(new FakeDeviceMapper().removesAnswer(Removal.BUSY, Removal.BUSY, Removal.BUSY)
                .onRemove(name -> sysfs.removeMap("dm-0")));
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertEquals(5, deviceMapper.calls().size(), deviceMapper.calls().toString());
        assertEquals(Duration.ofMillis(750), clock.elapsed());
        assertFalse(sysfs.hasMap("dm-0"));
    }

    @Test
    void aMapBusyToTheDeadlineIsInUseNamingItsMounts() throws IOException {
        MultipathMap map = map();
        mountPoints.add(Path.of("/var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"));
        useDeviceMapper(new FakeDeviceMapper().removesAlwaysAnswer(Removal.BUSY));
        MapInUseException e = assertThrows(MapInUseException.class,
                () -> multipath.remove(map, clock.instant().plusSeconds(10)));
        assertEquals(List.of("mounted at /var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"), e.users());
        assertTrue(e.getMessage().contains("DM_DEV_REMOVE said: mpatha is open (EBUSY)"), e.getMessage());
        assertEquals(Duration.ofSeconds(10), clock.elapsed());
        assertTrue(sysfs.hasMap("dm-0"));
    }

    @Test
    void aMapWithHoldersIsLeftToMultipathFlush() throws IOException {
        MultipathMap map = map();
        sysfs.addDm(1, "mpatha1", "part1-mpath-" + WWID, List.of("dm-0"));
        useDeviceMapper(new FakeDeviceMapper());
        commands.expect("multipath", "-f", "mpatha").andDo(c -> {
            sysfs.removeMap("dm-1");
            sysfs.removeMap("dm-0");
        });
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertEquals(List.of("message mpatha fail_if_no_path"), deviceMapper.calls());
        assertFalse(sysfs.hasMap("dm-0"));
    }

    @Test
    void withoutAUsableControlNodeTheToolsRun() throws IOException {
        MultipathMap map = map();
        commands.expect("dmsetup", "info", "-c", "--noheadings", "-o", "open", "mpatha").succeeds("  2\n");
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        assertEquals(2, multipath.openCount(map));
        multipath.remove(map, clock.instant().plusSeconds(60));
        assertEquals(List.of("openCount mpatha", "message mpatha fail_if_no_path", "remove mpatha"),
                deviceMapper.calls());
        assertFalse(sysfs.hasMap("dm-0"));
    }

    @Test
    void theOpenCountComesFromTheControlNode() throws IOException {
        MultipathMap map = map();
        useDeviceMapper(new FakeDeviceMapper().openCount("mpatha", 3));
        assertEquals(3, multipath.openCount(map));
    }

    @Test
    void aMapAlreadyGoneNeedsNoCommand() throws IOException {
        MultipathMap map = map();
        sysfs.removeMap("dm-0");
        multipath.remove(map, clock.instant().plusSeconds(60));
    }

    @Test
    void resizeAsksMultipathd() throws IOException {
        MultipathMap map = map();
        commands.expect("multipathd", "resize", "map", "mpatha").succeeds("ok\n");
        multipath.resize(map);
        commands.expect("multipathd", "resize", "map", "mpatha").succeeds("fail\n");
        assertThrows(CommandException.class, () -> multipath.resize(map));
    }

    @Test
    void findUsesTheWwidThenThePaths() throws IOException {
        assertTrue(multipath.find(LUN, List.of("sdb")).isEmpty());
        sysfs.addMap(0, "mpatha", "3600000000000000000000000000000ff", List.of("sdb"));
        assertEquals("mpatha", multipath.find(LUN, List.of("sdb")).orElseThrow().name());
    }

    @Test
    void theDaemonProbeAsksMultipathd() throws IOException {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 idle\n");
        commands.expect("multipathd", "show", "daemon").fails(1, "error -111 receiving packet");
        commands.expect("multipathd", "show", "daemon").throwing(c -> new CommandException(c, null, "no such file", null));
        commands.expect("multipathd", "show", "daemon").timesOut();
        commands.expect("multipathd", "show", "daemon").timesOut();
        Path unixSockets = temp.resolve("net-unix");
        MultipathDaemon daemon = MultipathDaemon.askingWith(commands, unixSockets);
        assertTrue(daemon.isRunning());
        assertFalse(daemon.isRunning());
        assertFalse(daemon.isRunning());
        Files.writeString(unixSockets, "Num       RefCount Protocol Flags    Type St Inode Path\n"
                + "0000000000000000: 00000002 00000000 00010000 0001 01 20311 @/org/kernel/linux/storage/multipathd\n");
        assertTrue(daemon.isRunning(), "a daemon that answers late while its socket is bound is busy, not absent");
        Files.writeString(unixSockets, "Num       RefCount Protocol Flags    Type St Inode Path\n");
        assertFalse(daemon.isRunning(), "a late answer with no socket bound: the client started late, no daemon runs");
    }

    private MultipathMap map() throws IOException {
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        return multipath.maps().byName("mpatha").orElseThrow();
    }
}
