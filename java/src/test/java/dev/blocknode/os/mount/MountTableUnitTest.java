package dev.blocknode.os.mount;

import dev.blocknode.os.DeviceNumber;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MountTableUnitTest {

    /** Read a line at a time, the filtered read keeps exactly what filtering the whole table would. */
    @Test
    void filteredReadKeepsWhatFilteringTheWholeTableKeeps(@TempDir Path dir) throws IOException {
        String text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                + "\n"
                + "736 29 253:3 /pvc-1 /var/lib/kubelet/a\\040b rw shared:1 master:2 - xfs /dev/mapper/mpatha rw\n"
                + "25 22 0:22 / /proc rw,nosuid - proc proc rw\n"
                + "737 29 253:3 / /var/lib/kubelet/staging rw - xfs /dev/mapper/mpatha rw\n"
                + "738 29 0:5 /dm-3 /var/lib/kubelet/dev rw - devtmpfs udev rw";
        Path mountInfo = Files.writeString(dir.resolve("mountinfo"), text, StandardCharsets.UTF_8);
        DeviceNumber map = new DeviceNumber(253, 3);

        List<MountEntry> kept = MountTable.read(mountInfo, e -> e.device().equals(map));

        assertEquals(MountTable.parse(text).stream().filter(e -> e.device().equals(map)).toList(), kept);
        assertEquals(List.of(Path.of("/var/lib/kubelet/a b"), Path.of("/var/lib/kubelet/staging")),
                kept.stream().map(MountEntry::mountPoint).toList());
        assertEquals(List.of(), MountTable.read(mountInfo, e -> false));
        assertEquals(MountTable.read(mountInfo), MountTable.read(mountInfo, e -> true));
    }

    @Test
    void lineWithOneOptionalField() {
        MountEntry e = MountTable.parseLine(
                "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro");
        assertEquals(22, e.id());
        assertEquals(1, e.parentId());
        assertEquals(new DeviceNumber(8, 1), e.device());
        assertEquals("/", e.root());
        assertEquals(Path.of("/"), e.mountPoint());
        assertEquals("rw,relatime", e.mountOptions());
        assertEquals("ext4", e.fsType());
        assertEquals("/dev/sda1", e.source());
        assertEquals("rw,errors=remount-ro", e.superOptions());
    }

    @Test
    void lineWithSeveralOptionalFields() {
        MountEntry e = MountTable.parseLine("736 29 253:3 /pvc-1 /var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/"
                + "pvc-1/mount rw,nosuid,nodev shared:1 master:2 propagate_from:3 - xfs /dev/mapper/mpatha "
                + "rw,seclabel,attr2,inode64,logbufs=8,noquota");
        assertEquals(736, e.id());
        assertEquals(29, e.parentId());
        assertEquals(new DeviceNumber(253, 3), e.device());
        assertEquals("/pvc-1", e.root());
        assertEquals(Path.of("/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pvc-1/mount"), e.mountPoint());
        assertEquals("rw,nosuid,nodev", e.mountOptions());
        assertEquals("xfs", e.fsType());
        assertEquals("/dev/mapper/mpatha", e.source());
        assertEquals("rw,seclabel,attr2,inode64,logbufs=8,noquota", e.superOptions());
    }

    @Test
    void theOptionalFieldsTellAPeerGroupFromASlave() {
        MountEntry shared = MountTable.parseLine("88 21 0:52 / /var/lib/kubelet rw,relatime shared:7 master:1 - tmpfs"
                + " tmpfs rw");
        assertEquals(List.of("shared:7", "master:1"), shared.optionalFields());
        assertTrue(shared.shared());
        MountEntry slave = MountTable.parseLine("89 21 0:53 / /mnt rw master:1 - tmpfs tmpfs rw");
        assertFalse(slave.shared());
        MountEntry none = MountTable.parseLine("90 21 0:54 / /srv rw - tmpfs tmpfs rw");
        assertEquals(List.of(), none.optionalFields());
        assertFalse(none.shared());
    }

    @Test
    void lineWithoutOptionalFields() {
        MountEntry e = MountTable.parseLine("25 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw");
        assertEquals(new DeviceNumber(0, 22), e.device());
        assertEquals(Path.of("/proc"), e.mountPoint());
        assertEquals("rw,nosuid,nodev,noexec,relatime", e.mountOptions());
        assertEquals("proc", e.fsType());
        assertEquals("proc", e.source());
        assertEquals("rw", e.superOptions());
    }

    @Test
    void largeDeviceNumbersAndIds() {
        MountEntry e = MountTable.parseLine("4021 4000 259:1048575 / /mnt/nvme rw - ext4 /dev/nvme0n1p1 rw");
        assertEquals(4021, e.id());
        assertEquals(4000, e.parentId());
        assertEquals(new DeviceNumber(259, 1048575), e.device());
        assertEquals("259:1048575", e.device().toString());
    }

    @Test
    void missingSuperOptionsBecomeEmpty() {
        MountEntry e = MountTable.parseLine("30 25 0:5 / /dev rw - devtmpfs udev");
        assertEquals("devtmpfs", e.fsType());
        assertEquals("udev", e.source());
        assertEquals("", e.superOptions());
    }

    @Test
    void octalEscapesInMountPointSourceAndRoot() {
        MountEntry e = MountTable.parseLine("100 22 7:3 /dir\\040a /var/lib/kubelet/pods/x/my\\040vol\\011tab"
                + " rw,relatime shared:5 - ext4 /dev/disk/by-label/back\\134slash rw");
        assertEquals("/dir a", e.root());
        assertEquals(Path.of("/var/lib/kubelet/pods/x/my vol\ttab"), e.mountPoint());
        assertEquals("/dev/disk/by-label/back\\slash", e.source());
    }

    @Test
    void escapedNewlineInMountPoint() {
        MountEntry e = MountTable.parseLine("101 22 7:3 / /mnt/a\\012b rw - ext4 /dev/loop3 rw");
        assertEquals(Path.of("/mnt/a\nb"), e.mountPoint());
    }

    @Test
    void unescape() {
        assertEquals("plain", MountTable.unescape("plain"));
        assertEquals("a b", MountTable.unescape("a\\040b"));
        assertEquals("a\tb", MountTable.unescape("a\\011b"));
        assertEquals("a\\b", MountTable.unescape("a\\134b"));
        assertEquals("a\nb", MountTable.unescape("a\\012b"));
        assertEquals("  ", MountTable.unescape("\\040\\040"));
        assertEquals(" 1", MountTable.unescape("\\0401"));
        assertEquals("\\040", MountTable.unescape("\\134040"));
    }

    @Test
    void unescapeLeavesIncompleteOrNonOctalEscapesAlone() {
        assertEquals("abc\\", MountTable.unescape("abc\\"));
        assertEquals("abc\\0", MountTable.unescape("abc\\0"));
        assertEquals("abc\\04", MountTable.unescape("abc\\04"));
        assertEquals("a\\089", MountTable.unescape("a\\089"));
        assertEquals("a\\x41", MountTable.unescape("a\\x41"));
        assertEquals("\\\\", MountTable.unescape("\\\\"));
    }

    @Test
    void unescapeWithoutBackslashReturnsSameString() {
        String field = "/var/lib/kubelet";
        assertSame(field, MountTable.unescape(field));
    }

    @Test
    void parseSkipsBlankLinesAndKeepsOrder() {
        String text = """
                22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw

                25 22 0:22 / /proc rw,nosuid - proc proc rw
                26 22 7:0 / /mnt/loop rw,noatime shared:7 - xfs /dev/loop0 rw,attr2
                """;
        List<MountEntry> entries = MountTable.parse(text);
        assertEquals(3, entries.size());
        assertEquals(List.of(22, 25, 26), entries.stream().map(MountEntry::id).toList());
        assertEquals(Path.of("/mnt/loop"), entries.get(2).mountPoint());
        assertEquals(new DeviceNumber(7, 0), entries.get(2).device());
    }

    @Test
    void parseOfEmptyTextIsEmpty() {
        assertTrue(MountTable.parse("").isEmpty());
        assertTrue(MountTable.parse("\n\n").isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "garbage",
            "22 1 8:1 / / rw,relatime shared:1 ext4 /dev/sda1 rw",
            "22 1 8:1 / / rw -",
            "22 1 8:1 / / rw - ext4",
            "22 1 8:1 / - ext4 /dev/sda1 rw"})
    void malformedLineIsRefusedQuotingIt(String line) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MountTable.parseLine(line));
        assertTrue(e.getMessage().contains("malformed mountinfo line"), e.getMessage());
        assertTrue(e.getMessage().contains(line), e.getMessage());
    }

    @Test
    void badNumbersAreRefused() {
        assertThrows(IllegalArgumentException.class,
                () -> MountTable.parseLine("x 1 8:1 / / rw - ext4 /dev/sda1 rw"));
        assertThrows(IllegalArgumentException.class,
                () -> MountTable.parseLine("22 1 81 / / rw - ext4 /dev/sda1 rw"));
        assertThrows(IllegalArgumentException.class,
                () -> MountTable.parseLine("22 1 a:b / / rw - ext4 /dev/sda1 rw"));
    }

    @Test
    void malformedLineInTheMiddleFailsTheWholeParse() {
        assertThrows(IllegalArgumentException.class, () -> MountTable.parse(
                "22 1 8:1 / / rw - ext4 /dev/sda1 rw\nbroken line\n25 22 0:22 / /proc rw - proc proc rw\n"));
    }

    @Test
    void readsAFile(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("mountinfo");
        Files.writeString(file, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                + "90 22 7:1 / /mnt/\u00fcber\\040x rw - ext4 /dev/loop1 rw\n", StandardCharsets.UTF_8);
        List<MountEntry> entries = MountTable.read(file);
        assertEquals(2, entries.size());
        assertEquals(Path.of("/mnt/\u00fcber x"), entries.get(1).mountPoint());
    }

    @Test
    void readsThisMachinesOwnMountTable() throws IOException {
        List<MountEntry> entries = MountTable.read(Path.of("/proc/self/mountinfo"));
        assertFalse(entries.isEmpty());
        assertTrue(entries.stream().anyMatch(e -> e.mountPoint().equals(Path.of("/"))));
        assertTrue(entries.stream().allMatch(e -> !e.fsType().isEmpty() && e.mountPoint().isAbsolute()));
    }

    @Test
    void missingFileIsAnIOException(@TempDir Path dir) {
        assertThrows(IOException.class, () -> MountTable.read(dir.resolve("absent")));
    }
}
