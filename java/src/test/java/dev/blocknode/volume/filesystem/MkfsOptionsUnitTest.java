package dev.blocknode.volume.filesystem;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A volume's mkfs options: what shapes the new filesystem passes; whatever could force over data, make no
 * filesystem, or name something outside the volume is refused by name, and no value is echoed back.
 */
class MkfsOptionsUnitTest {

    private static IllegalArgumentException refused(FilesystemType type, String text) {
        return assertThrows(IllegalArgumentException.class, () -> MkfsOptions.parse(text, type), text);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "", "  ", "-b 4096", "-i 65536 -I 512 -m 1", "-N 100000", "-L data_01", "-T largefile",
            "-O ^metadata_csum,64bit,project,quota", "-E stride=16,stripe_width=64,root_owner=1000:1000",
            "-E nodiscard,lazy_itable_init=0", "-J size=128", "-e remount-ro", "-b 1024\t-m 0"})
    void ext4TakesOptionsThatShapeTheFilesystem(String text) {
        MkfsOptions options = MkfsOptions.parse(text, FilesystemType.EXT4);
        assertEquals(text.isBlank(), options.isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-b size=4096", "-m crc=1,finobt=1,reflink=0,bigtime=1", "-i size=512,maxpct=5",
            "-l size=64m,lazy-count=1", "-d agcount=8,su=64k,sw=4", "-s size=4096", "-L data"})
    void xfsTakesOptionsThatShapeTheFilesystem(String text) {
        assertFalse(MkfsOptions.parse(text, FilesystemType.XFS).isEmpty());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "-F /dev/sda|-F is not allowed: it forces",
            "-n|-n is not allowed: it is a dry run",
            "-S|-S is not allowed",
            "-d /etc|-d is not allowed: it copies a directory of the node",
            "-l /tmp/bad|-l is not allowed",
            "-c|-c is not allowed",
            "-z /tmp/undo|-z is not allowed",
            "-t ext2|-t is not allowed",
            "-O journal_dev|-O of mkfs.ext4 has a value it does not take",
            "-J device=/dev/sdb|-J of mkfs.ext4 has a value it does not take",
            "-E offset=4096|-E of mkfs.ext4 has a value it does not take",
            "-E discard|-E of mkfs.ext4 has a value it does not take",
            "-e panic|-e of mkfs.ext4 has a value it does not take",
            "-b 4096 -b 1024|-b is given twice",
            "-b|-b needs a value",
            "-L -F|-L needs a value",
            "-b 3000|-b of mkfs.ext4 has a value it does not take",
            "-x 1|-x is not one blocknode passes to mkfs.ext4",
            "/dev/sdb|word 1 is not an option of the form -X",
            "--force|word 1 is not an option of the form -X"})
    void ext4RefusesWhatCouldDestroyDataOrPointElsewhere(String text, String why) {
        IllegalArgumentException e = refused(FilesystemType.EXT4, text);
        assertTrue(e.getMessage().contains(why), e.getMessage());
        assertFalse(e.getMessage().contains("/dev/sdb") || e.getMessage().contains("/etc"),
                "no value echoed: " + e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "-f|-f is not allowed: it forces",
            "-N|-N is not allowed: it is a dry run",
            "-p /etc/proto|-p is not allowed",
            "-r rtdev=/dev/sdc|-r is not allowed",
            "-l logdev=/dev/sdc|-l of mkfs.xfs has a value it does not take",
            "-d file,name=/tmp/x|-d of mkfs.xfs has a value it does not take",
            "-m uuid=1234|-m of mkfs.xfs has a value it does not take",
            "-m crc=1,crc=0|-m of mkfs.xfs has a value it does not take",
            "-K|-K is not allowed",
            "-L thirteen_char|-L of mkfs.xfs has a value it does not take",
            "-n size=8192|-n is not one blocknode passes to mkfs.xfs"})
    void xfsRefusesWhatCouldDestroyDataOrPointElsewhere(String text, String why) {
        IllegalArgumentException e = refused(FilesystemType.XFS, text);
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }

    @Test
    void lengthAndCountAreBounded() {
        assertTrue(refused(FilesystemType.EXT4, "-L " + "a".repeat(MkfsOptions.MAX_LENGTH)).getMessage()
                .contains("at most " + MkfsOptions.MAX_LENGTH));
        assertTrue(refused(FilesystemType.EXT4, "-m 1 ".repeat(MkfsOptions.MAX_OPTIONS + 1)).getMessage()
                .contains("more than " + MkfsOptions.MAX_OPTIONS));
    }

    @Test
    void aControlCharacterIsNeverAValueNorEchoed() {
        IllegalArgumentException e = refused(FilesystemType.EXT4, "-L a\u001b[2J");
        assertFalse(e.getMessage().contains("\u001b"), e.getMessage());
    }

    @Test
    void theArgvKeepsTheGivenOrderAndCanLeaveOneOut() {
        MkfsOptions options = MkfsOptions.parse("-E stride=8 -b 4096", FilesystemType.EXT4);
        assertEquals(List.of("-E", "stride=8", "-b", "4096"), options.argv(""));
        assertEquals(List.of("-b", "4096"), options.argv("-E"));
        assertEquals("stride=8", options.valueOf("-E").orElseThrow());
    }
}
