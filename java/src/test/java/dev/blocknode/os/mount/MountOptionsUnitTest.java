package dev.blocknode.os.mount;

import dev.blocknode.os.natives.LinuxNative;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MountOptionsUnitTest {

    private static MountOptions parse(String... options) {
        return MountOptions.parse(List.of(options));
    }

    @Test
    void emptyInputIsNone() {
        assertEquals(MountOptions.NONE, parse());
        assertEquals(0, parse().flags());
        assertNull(parse().dataString());
        assertFalse(parse().readOnly());
    }

    @Test
    void flagWordsBecomeBits() {
        assertEquals(LinuxNative.MS_RDONLY, parse("ro").flags());
        assertEquals(LinuxNative.MS_NOSUID, parse("nosuid").flags());
        assertEquals(LinuxNative.MS_NODEV, parse("nodev").flags());
        assertEquals(LinuxNative.MS_NOEXEC, parse("noexec").flags());
        assertEquals(LinuxNative.MS_SYNCHRONOUS, parse("sync").flags());
        assertEquals(LinuxNative.MS_DIRSYNC, parse("dirsync").flags());
        assertEquals(LinuxNative.MS_NOATIME, parse("noatime").flags());
        assertEquals(LinuxNative.MS_NODIRATIME, parse("nodiratime").flags());
        assertEquals(LinuxNative.MS_RELATIME, parse("relatime").flags());
        assertEquals(LinuxNative.MS_STRICTATIME, parse("strictatime").flags());
        assertEquals(LinuxNative.MS_LAZYTIME, parse("lazytime").flags());
        assertEquals(LinuxNative.MS_SILENT, parse("silent").flags());
    }

    @Test
    void flagsAndDataAreSeparated() {
        MountOptions options = parse("noatime", "data=ordered", "nodev", "errors=remount-ro");
        assertEquals(LinuxNative.MS_NOATIME | LinuxNative.MS_NODEV, options.flags());
        assertEquals(List.of("data=ordered", "errors=remount-ro"), options.data());
        assertEquals("data=ordered,errors=remount-ro", options.dataString());
    }

    @Test
    void positiveWordsAloneSetNothing() {
        assertEquals(0, parse("rw", "suid", "dev", "exec", "async", "atime", "diratime", "norelatime",
                "nolazytime", "loud").flags());
        assertEquals(List.of(), parse("rw", "exec").data());
    }

    @Test
    void laterNegationWins() {
        assertFalse(parse("ro", "rw").readOnly());
        assertEquals(0, parse("ro", "rw").flags());
        assertTrue(parse("rw", "ro").readOnly());
        assertEquals(LinuxNative.MS_NODEV, parse("nosuid", "nodev", "suid").flags());
        assertEquals(LinuxNative.MS_NOEXEC, parse("exec", "noexec").flags());
        assertEquals(0, parse("noatime,atime").flags());
    }

    @Test
    void negationClearsOnlyItsOwnBit() {
        MountOptions options = parse("ro,nosuid,nodev,noexec", "suid");
        assertEquals(LinuxNative.MS_RDONLY | LinuxNative.MS_NODEV | LinuxNative.MS_NOEXEC, options.flags());
    }

    @Test
    void entryMayHoldSeveralCommaSeparatedOptions() {
        MountOptions options = parse("ro,noatime,discard", "nobarrier");
        assertTrue(options.readOnly());
        assertEquals(LinuxNative.MS_RDONLY | LinuxNative.MS_NOATIME, options.flags());
        assertEquals(List.of("discard", "nobarrier"), options.data());
    }

    @Test
    void emptyElementsAndSurroundingWhitespaceAreIgnored() {
        MountOptions options = parse(",ro,, noatime ,", "", " ");
        assertEquals(LinuxNative.MS_RDONLY | LinuxNative.MS_NOATIME, options.flags());
        assertEquals(List.of(), options.data());
    }

    @Test
    void fstabOnlyWordsAreDropped() {
        MountOptions options = parse("defaults", "auto,noauto", "nofail", "_netdev", "discard");
        assertEquals(0, options.flags());
        assertEquals(List.of("discard"), options.data());
    }

    @Test
    void dataKeepsOrderAndDuplicates() {
        assertEquals("b=1,a=2,b=1", parse("b=1", "a=2,b=1").dataString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"bind", "rbind", "move", "remount", "shared", "rshared", "private", "rprivate", "slave",
            "rslave", "unbindable", "runbindable", "loop", "user", "users", "owner", "group", "x-mount.mkdir",
            "x-systemd.automount", "x-anything", "ro,bind", "noatime, remount"})
    void optionsThatChangeTheKindOfMountAreRefused(String option) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(option));
        assertTrue(e.getMessage().contains("not allowed"), e.getMessage());
    }

    @Test
    void refusalNamesTheOption() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse("noatime", "rshared"));
        assertTrue(e.getMessage().contains("\"rshared\""), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"a b", "data=\u0001x", "foo\tbar", "uid=\u00e9", "x\u007f", "a\nb", "\u0000"})
    void controlCharactersSpacesAndNonAsciiAreRefused(String option) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(option));
        assertTrue(e.getMessage().contains("control character"), e.getMessage());
        // The message itself must not carry the control character on into a log.
        assertTrue(e.getMessage().chars().allMatch(c -> c >= 0x20 && c < 0x7f), e.getMessage());
    }

    @Test
    void veryLongRefusedOptionIsShortenedInTheMessage() {
        String option = "x-" + "a".repeat(500);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(option));
        assertTrue(e.getMessage().length() < 200, e.getMessage());
        assertTrue(e.getMessage().contains("..."), e.getMessage());
    }

    @Test
    void perMountPointKeepsOnlyPerMountPointBitsAndDropsData() {
        MountOptions options = parse("ro", "nosuid", "nodev", "noexec", "noatime", "nodiratime", "relatime",
                "strictatime", "sync", "dirsync", "lazytime", "silent", "data=ordered");
        MountOptions bind = options.perMountPoint();
        assertEquals(LinuxNative.MS_RDONLY | LinuxNative.MS_NOSUID | LinuxNative.MS_NODEV | LinuxNative.MS_NOEXEC
                | LinuxNative.MS_NOATIME | LinuxNative.MS_NODIRATIME | LinuxNative.MS_RELATIME
                | LinuxNative.MS_STRICTATIME, bind.flags());
        assertEquals(List.of(), bind.data());
        assertNull(bind.dataString());
        assertTrue(bind.readOnly());
        assertEquals(0, parse("sync", "dirsync", "lazytime", "silent", "discard").perMountPoint().flags());
    }

    @Test
    void perMountPointFlagsNeverContainMountKindBits() {
        long kind = LinuxNative.MS_BIND | LinuxNative.MS_REC | LinuxNative.MS_REMOUNT | LinuxNative.MS_MOVE
                | LinuxNative.MS_SHARED | LinuxNative.MS_PRIVATE | LinuxNative.MS_SLAVE | LinuxNative.MS_UNBINDABLE;
        assertEquals(0, MountOptions.PER_MOUNT_POINT_FLAGS & kind);
    }

    @Test
    void withFlagsAddsBitsAndKeepsData() {
        MountOptions options = parse("nodev", "discard").withFlags(LinuxNative.MS_RDONLY);
        assertEquals(LinuxNative.MS_NODEV | LinuxNative.MS_RDONLY, options.flags());
        assertTrue(options.readOnly());
        assertEquals(List.of("discard"), options.data());
    }

    @Test
    void dataIsCopiedAndUnmodifiable() {
        List<String> data = new ArrayList<>(List.of("discard"));
        MountOptions options = new MountOptions(0, data);
        data.add("nobarrier");
        assertEquals(List.of("discard"), options.data());
        assertThrows(UnsupportedOperationException.class, () -> options.data().add("x"));
    }

    @Test
    void inputCollectionIsNotModified() {
        List<String> input = new ArrayList<>(List.of("ro,noatime", "defaults"));
        MountOptions.parse(input);
        assertEquals(List.of("ro,noatime", "defaults"), input);
    }

    /** `nosuid;x` passed and reached mount(2) only after a blank device had been formatted. */
    @ParameterizedTest
    @ValueSource(strings = {"nosuid;x", "data=ordered;reboot", "a$b", "errors=\"x", "uid=1000'", "a\\b", "=x",
            "opt=a\"b\"", "-o"})
    void optionsNoFilesystemTakesAreRefusedUpFront(String option) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(option));
        assertTrue(e.getMessage().contains("is not of the form"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"errors=remount-ro", "data=ordered", "commit=5", "usrjquota=aquota.user",
            "logbsize=256k", "context=\"system_u:object_r:container_file_t:s0\"", "uid=1000", "x_y.z-1"})
    void ordinaryOptionsStillPass(String option) {
        assertEquals(List.of(option), parse(option).data());
    }

    /** 3,000 unknown options came back as a 93 KB status message. */
    @Test
    void tooManyOrTooLongOptionsAreRefusedWithAShortMessage() {
        List<String> many = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            many.add("unknownoption" + i);
        }
        IllegalArgumentException count = assertThrows(IllegalArgumentException.class, () -> MountOptions.parse(many));
        assertTrue(count.getMessage().contains("at most " + MountOptions.MAX_ENTRIES), count.getMessage());
        assertTrue(count.getMessage().length() < 100, count.getMessage());

        String joined = String.join(",", many.subList(0, 400));
        IllegalArgumentException length = assertThrows(IllegalArgumentException.class, () -> parse(joined));
        assertTrue(length.getMessage().contains("at most " + MountOptions.MAX_TOTAL_LENGTH), length.getMessage());
        assertTrue(length.getMessage().length() < 100, length.getMessage());

        List<String> allowed = many.subList(0, MountOptions.MAX_ENTRIES);
        assertEquals(MountOptions.MAX_ENTRIES, MountOptions.parse(allowed).data().size());
    }

    /** kubelet's SELinux mount option: its categories hold a comma, inside the quotes. */
    @Test
    void aCommaInsideQuotesBelongsToTheValue() {
        String context = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";
        MountOptions options = parse("noatime," + context + ",data=ordered");
        assertEquals(LinuxNative.MS_NOATIME, options.flags());
        assertEquals(List.of(context, "data=ordered"), options.data());
        assertEquals(context + ",data=ordered", options.dataString());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> parse("context=\"system_u:object_r:x:s0:c1,c2"));
        assertTrue(e.getMessage().contains("is not of the form"), e.getMessage());
    }
}
