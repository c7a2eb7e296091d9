package dev.blocknode.volume.filesystem;

import dev.blocknode.os.exec.Command;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FilesystemTypeUnitTest {

    private static final Path DEVICE = Path.of("/dev/mapper/mpatha");

    @Test
    void byNameIsCaseInsensitive() {
        assertEquals(Optional.of(FilesystemType.EXT4), FilesystemType.byName("ext4"));
        assertEquals(Optional.of(FilesystemType.EXT4), FilesystemType.byName("EXT4"));
        assertEquals(Optional.of(FilesystemType.XFS), FilesystemType.byName("xfs"));
        assertEquals(Optional.of(FilesystemType.XFS), FilesystemType.byName("XfS"));
    }

    @Test
    void byNameOfUnknownFilesystems() {
        for (String name : new String[]{"btrfs", "ext3", "", " ext4", "ext4 ", "vfat", "EXT"}) {
            assertEquals(Optional.empty(), FilesystemType.byName(name), name);
        }
    }

    @Test
    void kernelNames() {
        assertEquals("ext4", FilesystemType.EXT4.kernelName());
        assertEquals("xfs", FilesystemType.XFS.kernelName());
    }

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    void formattingNeverForces(FilesystemType type) {
        Command format = type.format(DEVICE);
        for (String arg : format.argv()) {
            assertFalse(arg.equals("-f") || arg.equals("-F") || arg.equals("--force"),
                    type + " formats with " + format.display());
            // no force flag hidden in a cluster of short options either
            if (arg.startsWith("-") && !arg.startsWith("--")) {
                assertFalse(arg.contains("f") || arg.contains("F"), type + " formats with " + format.display());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    void formatNamesTheDeviceLastAndRunsATool(FilesystemType type) {
        Command format = type.format(DEVICE);
        assertEquals(DEVICE.toString(), format.argv().get(format.argv().size() - 1));
        assertEquals("mkfs." + type.kernelName(), format.program());
        assertTrue(type.tools().contains(format.program()));
    }

    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    void theDryRunWritesNothingNeverForcesAndOtherwiseFormatsTheSame(FilesystemType type) {
        MkfsOptions options = MkfsOptions.parse("-L data", type);
        List<String> plain = type.format(DEVICE, options).argv();
        List<String> dryRun = type.dryRun(DEVICE, options).argv();
        assertEquals(plain.size() + 1, dryRun.size(), dryRun.toString());
        assertEquals(type == FilesystemType.EXT4 ? "-n" : "-N", dryRun.get(1));
        List<String> withoutDryRun = new java.util.ArrayList<>(dryRun);
        withoutDryRun.remove(1);
        assertEquals(plain, withoutDryRun);
        assertFalse(dryRun.contains("-F") || dryRun.contains("-f") || plain.contains("-F") || plain.contains("-f"),
                "never forced: " + dryRun);
    }

    @Test
    void formatSkipsDiscard() {
        assertTrue(FilesystemType.EXT4.format(DEVICE).display().contains("nodiscard"));
        assertTrue(FilesystemType.XFS.format(DEVICE).argv().contains("-K"));
    }

    /**
     * Growing is by descriptor (FilesystemGrower), so no grow tool is needed: neither resize2fs nor xfs_growfs; ext4
     * adds the e2fsck that preens it before a mount (Ext4Preen).
     */
    @ParameterizedTest
    @EnumSource(FilesystemType.class)
    void theToolsAreTheMkfsAndForExt4ItsPreen(FilesystemType type) {
        List<String> expected = new java.util.ArrayList<>(List.of(type.format(DEVICE).program()));
        if (type == FilesystemType.EXT4) {
            expected.add(Ext4Preen.PROGRAM);
        }
        assertEquals(expected, type.tools());
    }

    @Test
    void aVolumesOwnOptionsComeBeforeTheDeviceAndExt4sExtendedOnesJoinBlocknodes() {
        MkfsOptions ext4 = MkfsOptions.parse("-E stride=16,stripe_width=64 -b 4096 -L data", FilesystemType.EXT4);
        assertEquals(List.of("mkfs.ext4", "-q", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1,stride=16,"
                        + "stripe_width=64", "-b", "4096", "-L", "data", DEVICE.toString()),
                FilesystemType.EXT4.format(DEVICE, ext4).argv());
        MkfsOptions xfs = MkfsOptions.parse("-m reflink=0 -i size=512", FilesystemType.XFS);
        assertEquals(List.of("mkfs.xfs", "-q", "-K", "-m", "reflink=0", "-i", "size=512", DEVICE.toString()),
                FilesystemType.XFS.format(DEVICE, xfs).argv());
    }
}
