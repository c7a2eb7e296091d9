package dev.blocknode.volume.filesystem;

import dev.blocknode.volume.request.AccessType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mount flags checked against the filesystem's own options, as a capability is translated (node and controller
 * alike): what mount(2) would refuse with EINVAL is refused before a blank device is formatted, naming the
 * option and never quoting its value.
 */
class FilesystemOptionsUnitTest {

    private static final String SELINUX = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";

    private static IllegalArgumentException refused(String fsType, String... flags) {
        return assertThrows(IllegalArgumentException.class, () -> AccessType.Mount.parsed(fsType, List.of(flags)),
                fsType + " " + List.of(flags));
    }

    private static void accepted(String fsType, String... flags) {
        assertDoesNotThrow(() -> AccessType.Mount.parsed(fsType, List.of(flags)), fsType + " " + List.of(flags));
    }

    /** Options each of which used to format a blank device before mount(2) refused them. */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
            "ext4|foo=bar|foo|bar",
            "ext4|nosuid,x=y|x|",
            "xfs|foo=bar|foo|bar",
            "ext4|data=bogus|data|bogus",
            "xfs|logbufs=99|logbufs|99",
            "ext4|commit=abc|commit|abc"})
    void theReportedOptionsAreRefusedNamingTheOptionNotItsValue(String fs, String flags, String name, String value) {
        String message = refused(fs, flags).getMessage();
        assertTrue(message.contains("mount option " + name + "="), message);
        if (value != null) {
            assertFalse(message.contains(value), "the value is never quoted: " + message);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"data=journal", "data=ordered", "data=writeback", "commit=30", "commit=0",
            "errors=remount-ro", "errors=continue", "barrier", "nobarrier", "barrier=0", "discard", "nodiscard",
            "journal_checksum", "stripe=16", "resuid=1000", "resgid=0", "dioread_nolock", "delalloc",
            "inode_readahead_blks=64", "journal_ioprio=3", "max_batch_time=15000", "data_err=abort", "acl",
            "user_xattr", "prjquota", "jqfmt=vfsv1", "dax=never", "noauto_da_alloc", "block_validity"})
    void ext4TakesItsDocumentedOptions(String option) {
        accepted("ext4", option);
    }

    @ParameterizedTest
    @ValueSource(strings = {"logbufs=2", "logbufs=8", "logbufs=0", "logbsize=256k", "logbsize=32768", "allocsize=64k",
            "allocsize=1g", "inode32", "inode64", "sunit=128,swidth=512", "noquota", "uquota", "gquota", "pquota",
            "prjquota,grpquota", "discard", "largeio", "wsync", "nouuid", "swalloc", "filestreams", "noalign"})
    void xfsTakesItsDocumentedOptions(String option) {
        accepted("xfs", option);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs", ""})
    void theGenericFlagsAndAnSeLinuxContextWithACommaInQuotesSuitEveryFilesystem(String fs) {
        accepted(fs, "ro", "nosuid,nodev", "noexec", "noatime", "relatime", "lazytime", "sync", "dirsync");
        accepted(fs, SELINUX);
        accepted(fs, "nosuid," + SELINUX + ",nodev");
        accepted(fs, "fscontext=system_u:object_r:container_file_t:s0", "rootcontext=system_u:object_r:tmp_t:s0");
        assertEquals(List.of(SELINUX), AccessType.Mount.parsed(fs, List.of("nosuid," + SELINUX)).options().data(),
                "the context reaches mount(2) whole, its comma included");
    }

    @Test
    void aContextThatIsNoSeLinuxContextIsRefused() {
        assertTrue(refused("ext4", "context=foo").getMessage().contains("mount option context="));
        refused("ext4", "context=\"a:b\"");
    }

    @Test
    void valuesOutsideTheirGrammarAreRefused() {
        refused("ext4", "commit=-1");
        refused("ext4", "commit=99999999999999999999");
        refused("ext4", "journal_ioprio=8");
        refused("ext4", "inode_readahead_blks=3");
        refused("ext4", "data");
        refused("ext4", "acl=1");
        refused("xfs", "logbufs=1");
        refused("xfs", "logbsize=100k");
        refused("xfs", "allocsize=3k");
        refused("xfs", "allocsize=2g");
        refused("xfs", "dax=sometimes");
        assertTrue(refused("xfs", "sunit=128").getMessage().contains("go together"));
        assertTrue(refused("xfs", "sunit=128,swidth=200").getMessage().contains("multiple"));
        refused("xfs", "sunit=0,swidth=512");
    }

    @Test
    void optionsThatMakeNoSenseForACsiVolumeAreRefusedWithTheReason() {
        assertTrue(refused("ext4", "journal_dev=2049").getMessage().contains("outside the volume"));
        assertTrue(refused("ext4", "journal_path=/dev/sdb").getMessage().contains("outside the volume"));
        assertTrue(refused("ext4", "usrjquota=aquota.user").getMessage().contains("quota file"));
        assertTrue(refused("ext4", "errors=panic").getMessage().contains("panic the node"));
        assertTrue(refused("ext4", "noload").getMessage().contains("only with ro"));
        assertTrue(refused("xfs", "norecovery").getMessage().contains("only with ro"));
        assertTrue(refused("xfs", "logdev=/dev/sdb").getMessage().contains("outside the volume"));
        assertTrue(refused("xfs", "nobarrier").getMessage().contains("removed"));
    }

    @Test
    void skippingTheJournalsReplayIsTakenReadOnly() {
        accepted("ext4", "ro", "noload");
        accepted("ext4", "ro,norecovery");
        accepted("xfs", "ro,norecovery");
        accepted("", "ro,norecovery");
        refused("xfs", "ro,noload");
    }

    @Test
    void anOptionOfTheOtherFilesystemIsRefused() {
        assertTrue(refused("ext4", "logbufs=4").getMessage().contains("not an option of ext4"));
        assertTrue(refused("xfs", "data=journal").getMessage().contains("not an option of xfs"));
    }

    @Test
    void withNoFsTypeTheOptionsMustSuitOneFilesystem() {
        accepted("", "data=journal");
        accepted("", "logbufs=4");
        refused("", "data=journal", "logbufs=4");
        refused("", "foo=bar");
    }

    @Test
    void theFsTypeIsReadAsTheNodeReadsIt() {
        accepted("EXT4", "data=journal");
        refused("XFS", "data=journal");
    }
}
