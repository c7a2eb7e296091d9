package dev.blocknode.transport.local;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.DeviceIdentity;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalTransportUnitTest {

    private static final int S_IFBLK = 0060000;
    private static final int S_IFREG = 0100000;

    @TempDir
    Path temp;

    private Path dev;
    private Path sys;
    private QueryOnlyMounter mounter;
    private LocalTransport transport;

    @AfterEach
    void neverReadsTheMountTable() {
        assertEquals(0, mounter.tableReads(), "the local transport must not read the mount table");
    }

    @BeforeEach
    void fabricateHost() throws IOException {
        Path root = temp.toRealPath();
        dev = Files.createDirectories(root.resolve("dev"));
        sys = Files.createDirectories(root.resolve("sys"));
        Path proc = Files.createDirectories(root.resolve("proc"));
        HostPaths paths = new HostPaths(sys, dev, proc, root.resolve("etc"));
        mounter = new QueryOnlyMounter();
        transport = new LocalTransport(new Host(paths, new ProcessCommandRunner(), mounter, new BlockDevices(paths)));
    }

    private static AttachRequest request(Map<String, String> volumeContext) {
        return new AttachRequest("vol-1", volumeContext, Map.of(), Secrets.NONE);
    }

    /** A file playing a block device node with the given number. */
    private Path blockDevice(String name, long major, long minor) throws IOException {
        Path node = Files.createFile(dev.resolve(name));
        mounter.stats.put(node, new FileStat(new DeviceNumber(0, 5), new DeviceNumber(major, minor), S_IFBLK | 0660,
                FileStat.MountRoot.NO));
        return node;
    }

    private void sysfsWwid(long major, long minor, String relative, String wwid) throws IOException {
        Path file = sys.resolve("dev/block/" + major + ":" + minor).resolve(relative);
        Files.createDirectories(file.getParent());
        Files.writeString(file, wwid);
    }

    private static VolumeException.Outcome outcome(org.junit.jupiter.api.function.Executable call) {
        return assertThrows(VolumeException.class, call).outcome();
    }

    // ---- identity -------------------------------------------------------------------------------

    @Test
    void nameAndIdentifyingKeys() {
        assertEquals("local", transport.name());
        assertEquals(LocalTransport.NAME, transport.name());
        assertEquals(Set.of("devicePath"), transport.identifyingKeys());
    }

    @Test
    void aDeviceAlreadyOnTheNodeHasNoPathsToReport() throws IOException {
        Attachment attachment = new Attachment(LocalTransport.NAME, Path.of("/dev/loop0"), new DeviceNumber(7, 0), "",
                Map.of("devicePath", "/dev/loop0"));
        assertEquals(Optional.empty(), transport.pathHealth(attachment));
    }

    // ---- validate -------------------------------------------------------------------------------

    @Test
    void validateAcceptsPathsUnderDev() {
        LocalTransport real = new LocalTransport(new Host(HostPaths.real(), null, null, null));
        assertDoesNotThrow(() -> real.validate(request(Map.of("devicePath", "/dev/sdb"))));
        assertDoesNotThrow(() -> real.validate(request(Map.of("devicePath", "/dev/disk/by-id/wwn-0x5000c5"))));
        assertDoesNotThrow(() -> real.validate(request(Map.of("devicePath", " /dev/loop3 "))));
        assertDoesNotThrow(() -> real.validate(new AttachRequest("v", Map.of(),
                Map.of("devicePath", "/dev/mapper/mpatha"), Secrets.NONE)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"sdb", "dev/sdb", "./dev/sdb", "/etc/passwd", "/devices/sdb", "/dev/../etc/passwd",
            "/dev/disk/../../etc/shadow", "/tmp/dev/sdb", "/", "../dev/sdb"})
    void validateRefusesRelativeOrNonDevPaths(String path) {
        LocalTransport real = new LocalTransport(new Host(HostPaths.real(), null, null, null));
        VolumeException e = assertThrows(VolumeException.class,
                () -> real.validate(request(Map.of("devicePath", path))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().contains("volume_context.devicePath"), e.getMessage());
        assertTrue(e.getMessage().contains("/dev"), e.getMessage());
    }

    @Test
    void validateRefusesAMissingOrBlankKey() {
        for (Map<String, String> context : List.of(Map.<String, String>of(), Map.of("devicePath", ""),
                Map.of("devicePath", "   "), Map.of("wwid", "naa.1"))) {
            VolumeException e = assertThrows(VolumeException.class, () -> transport.validate(request(context)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
            assertTrue(e.getMessage().contains("devicePath"), e.getMessage());
            assertTrue(e.getMessage().contains("required"), e.getMessage());
        }
    }

    @Test
    void validateUsesTheHostsDevDirectory() {
        assertDoesNotThrow(() -> transport.validate(request(Map.of("devicePath", dev.resolve("sdz").toString()))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT,
                outcome(() -> transport.validate(request(Map.of("devicePath", "/dev/sdz")))));
    }

    // ---- attach ---------------------------------------------------------------------------------

    @Test
    void attachOfAMissingDeviceIsNotFoundWithoutTouchingTheHost() {
        Path missing = dev.resolve("sdq");
        VolumeException e = assertThrows(VolumeException.class,
                () -> transport.attach(request(Map.of("devicePath", missing.toString()))));
        assertEquals(VolumeException.Outcome.NOT_FOUND, e.outcome());
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("vol-1"), e.getMessage());
        assertEquals(List.of(), mounter.statted);
    }

    @Test
    void attachThroughADanglingLinkIsNotFound() throws IOException {
        Path link = Files.createDirectories(dev.resolve("disk/by-id")).resolve("wwn-0x1");
        Files.createSymbolicLink(link, Path.of("../../sdgone"));
        assertEquals(VolumeException.Outcome.NOT_FOUND,
                outcome(() -> transport.attach(request(Map.of("devicePath", link.toString())))));
    }

    @Test
    void attachOfAValidatedBadPathIsInvalidBeforeAnyLookup() {
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT,
                outcome(() -> transport.attach(request(Map.of("devicePath", "relative")))));
        assertEquals(List.of(), mounter.statted);
    }

    @Test
    void attachOfABlockDevice() throws Exception {
        Path node = blockDevice("loop3", 7, 3);
        Attachment attachment = transport.attach(request(Map.of("devicePath", node.toString())));
        assertEquals("local", attachment.transport());
        assertEquals(node, attachment.device());
        assertEquals(new DeviceNumber(7, 3), attachment.number());
        assertEquals("", attachment.identity());
        assertEquals(Map.of("devicePath", node.toString()), attachment.details());
    }

    @Test
    void attachTakesTheDeviceItsPlanReadWithoutReadingTheRequestAgain() throws Exception {
        // A stage's keys are parsed once, when it is planned: attach uses what validate read, so a plan naming one
        // device attaches that one even though its request (never read again) names another.
        Path node = blockDevice("loop4", 7, 4);
        LocalAttachPlan plan = new LocalAttachPlan(request(Map.of("devicePath", "not a path under dev")), node);
        assertEquals(node, transport.attach(plan).device());
    }

    @Test
    void attachRefusesAPlanAnotherTransportMade() {
        AttachRequest request = request(Map.of("devicePath", dev.resolve("loop3").toString()));
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> transport.attach((AttachPlan) () -> request));
        assertTrue(refused.getMessage().startsWith("the local transport was handed a plan it did not make"),
                refused.getMessage());
        assertEquals(List.of(), mounter.statted);
    }

    @Test
    void attachResolvesALinkAndRemembersTheNameGiven() throws Exception {
        Path node = blockDevice("sdc", 8, 32);
        Path link = Files.createDirectories(dev.resolve("disk/by-id")).resolve("wwn-0x5000c500a1b2c3d4");
        Files.createSymbolicLink(link, Path.of("../../sdc"));
        Attachment attachment = transport.attach(request(Map.of("devicePath", link.toString())));
        assertEquals(node, attachment.device());
        assertEquals(new DeviceNumber(8, 32), attachment.number());
        assertEquals(link.toString(), attachment.details().get("devicePath"));
        assertEquals(List.of(node), mounter.statted);
    }

    @Test
    void attachThroughALinkLeavingDevIsInvalid() throws Exception {
        Path outside = Files.createFile(temp.toRealPath().resolve("not-a-device"));
        mounter.stats.put(outside, new FileStat(new DeviceNumber(0, 5), new DeviceNumber(8, 0), S_IFBLK,
                FileStat.MountRoot.NO));
        Path link = dev.resolve("escape");
        Files.createSymbolicLink(link, outside);
        VolumeException e = assertThrows(VolumeException.class,
                () -> transport.attach(request(Map.of("devicePath", link.toString()))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().contains("resolves to " + outside), e.getMessage());
    }

    @Test
    void attachOfSomethingThatIsNotABlockDeviceIsInvalid() throws Exception {
        Path file = Files.createFile(dev.resolve("regular"));
        mounter.stats.put(file, new FileStat(new DeviceNumber(0, 5), new DeviceNumber(0, 0), S_IFREG | 0644,
                FileStat.MountRoot.NO));
        VolumeException e = assertThrows(VolumeException.class,
                () -> transport.attach(request(Map.of("devicePath", file.toString()))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().contains("not a block device"), e.getMessage());
    }

    @Test
    void attachVerifiesTheWwidFromDeviceWwid() throws Exception {
        Path node = blockDevice("sdd", 8, 48);
        sysfsWwid(8, 48, "device/wwid", "naa.6001405ABCDEF0123456789ABCDEF012  \n");
        Attachment attachment = transport.attach(request(Map.of("devicePath", node.toString(),
                "wwid", "  NAA.6001405abcdef0123456789abcdef012")));
        assertEquals("naa.6001405ABCDEF0123456789ABCDEF012", attachment.identity());
    }

    @Test
    void attachFallsBackToTheWwidAttributeOfTheBlockDevice() throws Exception {
        Path node = blockDevice("dm-2", 253, 2);
        sysfsWwid(253, 2, "wwid", "t10.ATA     QEMU HARDDISK    QM00001\n");
        Attachment attachment = transport.attach(request(Map.of("devicePath", node.toString(),
                "wwid", "t10.ATA QEMU HARDDISK QM00001")));
        assertEquals("t10.ATA     QEMU HARDDISK    QM00001", attachment.identity());
    }

    @Test
    void attachPrefersDeviceWwidOverTheBlockAttribute() throws Exception {
        Path node = blockDevice("sde", 8, 64);
        sysfsWwid(8, 64, "device/wwid", "naa.5000c50011111111");
        sysfsWwid(8, 64, "wwid", "naa.5000c50022222222");
        assertEquals("naa.5000c50011111111", transport.attach(request(Map.of("devicePath", node.toString(),
                "wwid", "naa.5000c50011111111"))).identity());
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(() -> transport.attach(request(Map.of(
                "devicePath", node.toString(), "wwid", "naa.5000c50022222222")))));
    }

    @Test
    void aMultipathMapIsVerifiedThroughItsDmUuidInEitherSpelling() throws Exception {
        Path node = blockDevice("dm-3", 253, 3);
        sysfsWwid(253, 3, "dm/uuid", "mpath-360014052e3c1d6a5b4c34b58a1f2e3d4\n");
        assertEquals("360014052e3c1d6a5b4c34b58a1f2e3d4", transport.attach(request(Map.of("devicePath",
                node.toString(), "wwid", "naa.60014052e3c1d6a5b4c34b58a1f2e3d4"))).identity());
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(() -> transport.attach(request(Map.of(
                "devicePath", node.toString(), "wwid", "360014052e3c1d6a5b4c34b58a1f2ffff")))));
    }

    @Test
    void anLvmVolumeHasNoLunIdentity() throws Exception {
        Path node = blockDevice("dm-4", 253, 4);
        sysfsWwid(253, 4, "dm/uuid", "LVM-abcdef\n");
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(() -> transport.attach(request(Map.of(
                "devicePath", node.toString(), "wwid", "naa.60014052e3c1d6a5b4c34b58a1f2e3d4")))));
    }

    @Test
    void attachRefusesAWrongWwid() throws Exception {
        Path node = blockDevice("sdf", 8, 80);
        sysfsWwid(8, 80, "device/wwid", "naa.600140500000000000000000000000aa");
        VolumeException e = assertThrows(VolumeException.class, () -> transport.attach(request(Map.of(
                "devicePath", node.toString(), "wwid", "naa.600140500000000000000000000000bb"))));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("naa.600140500000000000000000000000aa"), e.getMessage());
        assertTrue(e.getMessage().contains("naa.600140500000000000000000000000bb"), e.getMessage());
    }

    @Test
    void attachRefusesWhenTheDeviceReportsNoWwid() throws Exception {
        Path node = blockDevice("loop7", 7, 7);
        VolumeException e = assertThrows(VolumeException.class, () -> transport.attach(request(Map.of(
                "devicePath", node.toString(), "wwid", "naa.5000c50011111111"))));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("no wwid"), e.getMessage());
    }

    @Test
    void blankWwidMeansNoCheck() throws Exception {
        Path node = blockDevice("loop8", 7, 8);
        Attachment attachment = transport.attach(request(Map.of("devicePath", node.toString(), "wwid", " ")));
        assertEquals("", attachment.identity());
    }

    @Test
    void detachLeavesTheDeviceAlone() throws Exception {
        Path node = blockDevice("loop9", 7, 9);
        Attachment attachment = transport.attach(request(Map.of("devicePath", node.toString())));
        transport.detach(attachment);
        assertTrue(Files.exists(node));
    }

    // ---- DeviceIdentity.normalized ----------------------------------------------------------------------------

    @Test
    void normalizeWwid() {
        assertEquals("naa.6001405abc", DeviceIdentity.normalized("  NAA.6001405ABC\n"));
        assertEquals("t10.ata qemu harddisk qm00001",
                DeviceIdentity.normalized("t10.ATA     QEMU HARDDISK\tQM00001"));
        assertEquals("eui.0025388b91b3d1a2", DeviceIdentity.normalized("eui.0025388B91B3D1A2"));
        assertEquals("", DeviceIdentity.normalized(" \n "));
        assertTrue(!DeviceIdentity.normalized("naa.1").equals(DeviceIdentity.normalized("naa.10")));
    }
}
