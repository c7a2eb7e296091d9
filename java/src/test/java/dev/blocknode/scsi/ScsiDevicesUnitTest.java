package dev.blocknode.scsi;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.RecordingBlockDevices;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ScsiDevicesUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final ScsiAddress AT_1003 = new ScsiAddress(1, 0, 0, 3);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private RecordingBlockDevices block;
    private ScsiDevices devices;
    private ScsiHosts hosts;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.remotePort(1, 0, 0, "0x500601603ba0415a", "Online", 0);
        block = new RecordingBlockDevices(sysfs.paths());
        devices = new ScsiDevices(sysfs.paths(), sysfs, block);
        hosts = new ScsiHosts(sysfs.paths(), sysfs);
    }

    // ---- scans -------------------------------------------------------------------------------------

    @Test
    void aScanWritesExactlyChannelTargetLunToThatHostOnly() throws IOException {
        hosts.scan(AT_1003);
        assertEquals("0 0 3", sysfs.read(sysfs.scanFile(1)));
        assertEquals("", sysfs.read(sysfs.scanFile(2)));
        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3"), sysfs.writeLog());
        assertEquals(sysfs.sys().resolve("class/scsi_host/host1/scan"), hosts.scanAttribute(1));
    }

    @Test
    void aScanMakesAPresentedLunAppear() throws IOException {
        sysfs.presentLun(AT_1003, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        assertEquals(Optional.empty(), devices.diskAt(AT_1003));
        hosts.scan(AT_1003);
        ScsiDisk disk = devices.diskAt(AT_1003).orElseThrow();
        assertEquals("sdb", disk.name());
        assertEquals(new DeviceNumber(8, 16), disk.number());
        assertEquals(sysfs.paths().dev().resolve("sdb"), disk.devicePath());
    }

    @Test
    void aScanOfAHostThatIsGoneIsNoSuchFile() {
        assertFalse(hosts.exists(7));
        assertTrue(hosts.exists(1));
        assertThrows(NoSuchFileException.class, () -> hosts.scan(new ScsiAddress(7, 0, 0, 1)));
    }

    @Test
    void theDirectWriterNeverCreatesAnAttribute() {
        Path absent = sysfs.sys().resolve("class/scsi_host/host1/nonexistent");
        assertThrows(NoSuchFileException.class, () -> SysfsWriter.DIRECT.write(absent, "1"));
        assertFalse(Files.exists(absent));
    }

    @Test
    void theDirectWriterReplacesTheContent() throws IOException {
        Path scan = sysfs.scanFile(1);
        SysfsWriter.DIRECT.write(scan, "0 12 16384");
        SysfsWriter.DIRECT.write(scan, "0 1 2");
        assertEquals("0 1 2", Files.readString(scan));
    }

    // ---- finding disks -------------------------------------------------------------------------------

    @Test
    void findsADiskByAddressAndByName() throws IOException {
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        ScsiDisk byAddress = devices.diskAt(AT_1003).orElseThrow();
        assertEquals(byAddress, devices.diskNamed("sdb").orElseThrow());
        assertEquals(Optional.empty(), devices.diskNamed("sdz"));
        assertEquals(Optional.empty(), devices.diskAt(AT_1003.withLun(4)));
        assertTrue(devices.isPresent(byAddress));
    }

    @Test
    void aDmDeviceIsNotASCSIDisk() throws IOException {
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addMap(0, "mpatha", "3" + NAA, List.of("sdb"));
        assertEquals(Optional.empty(), devices.diskNamed("dm-0"));
    }

    @Test
    void listsEveryDiskInAddressOrder() throws IOException {
        sysfs.addDisk(new ScsiAddress(2, 0, 1, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 10), "sdd", new DeviceNumber(8, 48), "naa.600");
        assertEquals(List.of("sdb", "sdd", "sdc"), devices.disks().stream().map(ScsiDisk::name).toList());
    }

    @Test
    void readsTheState() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        assertEquals(ScsiDeviceState.RUNNING, devices.state(disk));
        sysfs.setState("sdb", "transport-offline");
        assertEquals(ScsiDeviceState.TRANSPORT_OFFLINE, devices.state(disk));
        sysfs.removeDisk("sdb");
        assertEquals(ScsiDeviceState.GONE, devices.state(disk));
    }

    // ---- identity ----------------------------------------------------------------------------------

    @Test
    void identityFromTheKernelWwid() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        LunIdentity identity = devices.identity(disk).orElseThrow();
        assertEquals(Wwid.naa(NAA), identity.wwid());
        assertTrue(identity.matches(Wwid.parse("3" + NAA)));
    }

    @Test
    void identityFallsBackToVpdPage83WhenThereIsNoWwidAttribute() throws IOException {
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), null,
                Vpd.page(Vpd.t10("LIO-ORG block1  abc"), Vpd.naa(NAA)), "running");
        LunIdentity identity = devices.identity(devices.diskAt(AT_1003).orElseThrow()).orElseThrow();
        assertEquals(Wwid.naa(NAA), identity.wwid());
        assertTrue(identity.matches(Wwid.parse("t10.LIO-ORG block1  abc")), "every LUN designator identifies it");
    }

    @Test
    void theMultipathChoiceFromThePageWinsOverTheKernelsChoice() throws IOException {
        // The kernel prefers a SCSI name string; multipath (and so the dm uuid) prefers the NAA.
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), "iqn.2003-01.example:lun3",
                Vpd.page(Vpd.scsiName(Vpd.LUN, "iqn.2003-01.example:lun3"), Vpd.naa(NAA)), "running");
        LunIdentity identity = devices.identity(devices.diskAt(AT_1003).orElseThrow()).orElseThrow();
        assertEquals(Wwid.naa(NAA), identity.wwid());
        assertTrue(identity.matches(Wwid.parse("iqn.2003-01.example:lun3")));
    }

    @Test
    void noWwidAndNoPageIsNoIdentity() throws IOException {
        sysfs.addDisk(AT_1003, "sdb", new DeviceNumber(8, 16), null, null, "running");
        assertEquals(Optional.empty(), devices.identity(devices.diskAt(AT_1003).orElseThrow()));
    }

    // ---- holders, rescan, removal --------------------------------------------------------------------

    @Test
    void listsHolders() throws IOException {
        disk("sdb", AT_1003);
        assertEquals(List.of(), devices.holders("sdb"));
        sysfs.addMap(0, "mpatha", "3" + NAA, List.of("sdb"));
        assertEquals(List.of("dm-0"), devices.holders("sdb"));
        assertEquals(List.of(), devices.holders("sdq"));
    }

    @Test
    void rescanWritesOneToTheDevicesRescan() throws IOException {
        devices.rescan(disk("sdb", AT_1003));
        assertEquals(List.of("class/block/sdb/device/rescan=1"), sysfs.writeLog());
    }

    @Test
    void removeFlushesThenDeletes() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        assertTrue(devices.remove(disk));
        assertEquals(List.of(sysfs.paths().dev().resolve("sdb")), block.flushed());
        assertEquals(List.of("class/block/sdb/device/delete=1"), sysfs.writeLog());
        assertFalse(devices.isPresent(disk));
        assertFalse(devices.remove(disk), "already gone");
        assertEquals(1, sysfs.writes().size());
    }

    @Test
    void aRunningDiskThatCannotBeFlushedIsNotDeleted() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        block.failFlush(disk.devicePath(), new IOException("Input/output error"));
        IOException e = assertThrows(IOException.class, () -> devices.remove(disk));
        assertTrue(e.getMessage().contains("cannot flush sdb"), e.getMessage());
        assertTrue(devices.isPresent(disk));
        assertEquals(List.of(), sysfs.writes());
    }

    @Test
    void aRunningDiskWhoseLunRefusesThisNodeUnderAReservationIsDeletedAnyway() throws IOException {
        // Fenced out: the array answers the flush's SYNCHRONIZE CACHE with RESERVATION CONFLICT (EBADE). Keeping the
        // disk would keep the volume on this node for ever; its unwritten data can never reach the LUN from here.
        ScsiDisk disk = disk("sdb", AT_1003);
        block.failFlush(disk.devicePath(), SyscallException.of(new NativeIOException("fsync", "/dev/sdb", 52,
                "EBADE", "Invalid exchange")));
        assertTrue(devices.remove(disk));
        assertFalse(devices.isPresent(disk));
        assertEquals(List.of("class/block/sdb/device/delete=1"), sysfs.writeLog());
    }

    @Test
    void aDeadPathThatCannotBeFlushedIsDeletedAnyway() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        sysfs.setState("sdb", "transport-offline");
        block.failFlush(disk.devicePath(), new IOException("Input/output error"));
        assertTrue(devices.remove(disk));
        assertFalse(devices.isPresent(disk));
    }

    @Test
    void aDiskWithoutADevNodeIsStillDeleted() throws IOException {
        ScsiDisk disk = disk("sdb", AT_1003);
        Files.delete(disk.devicePath());
        assertTrue(devices.remove(disk));
        assertFalse(devices.isPresent(disk));
    }

    @Test
    void removeLeavesAnotherDiskNowAtTheAddressAlone() throws IOException {
        ScsiDisk old = disk("sdb", AT_1003);
        sysfs.removeDisk("sdb");
        sysfs.addDisk(AT_1003, "sdk", new DeviceNumber(8, 160), "naa.6000");
        assertFalse(devices.remove(old));
        assertTrue(sysfs.hasDisk("sdk"));
        assertEquals(List.of(), sysfs.writes());
    }

    private ScsiDisk disk(String name, ScsiAddress address) throws IOException {
        sysfs.addDisk(address, name, new DeviceNumber(8, 16), "naa." + NAA);
        return devices.diskAt(address).orElseThrow();
    }

    // ---- a path device opened for commands ---------------------------------------------------------

    /**
     * After the open, sysfs is asked about the opened number: the disk of that name must still have it and
     * still be the LUN; anything else refuses the path before a command goes down it.
     */
    @Test
    void anOpenedPathIsAPathOfTheLunOnlyWhileTheNameHasItsNumberAndTheLunIsBehindIt() throws IOException {
        DeviceNumber sdb = new DeviceNumber(8, 16);
        sysfs.addDisk(AT_1003, "sdb", sdb, "naa." + NAA);
        LunPath path = new LunPath(sysfs.paths().dev().resolve("sdb"), Wwid.naa(NAA));

        devices.requirePathOf(path, sdb);

        IOException otherNumber = assertThrows(IOException.class,
                () -> devices.requirePathOf(path, new DeviceNumber(8, 32)));
        assertTrue(otherNumber.getMessage().contains("not the SCSI disk 8:32 that was opened"),
                otherNumber.getMessage());
        IOException otherLun = assertThrows(IOException.class, () -> devices.requirePathOf(
                new LunPath(path.device(), Wwid.naa("6001405ffffeeeeddddccccbbbbaaaa0")), sdb));
        assertTrue(otherLun.getMessage().contains("leads to LUN"), otherLun.getMessage());

        sysfs.removeDisk("sdb");
        assertThrows(IOException.class, () -> devices.requirePathOf(path, sdb), "a disk gone since the open");
    }
}
