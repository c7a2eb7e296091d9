package dev.blocknode.volume.filesystem;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.ScriptedCommandRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** e2fsck -p's exit status, read as its manual defines the bits: what may be mounted, what is refused and how. */
class Ext4PreenUnitTest {

    private static final Path DEVICE = Path.of("/dev/dm-3");
    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final Ext4Preen preen = new Ext4Preen(commands);

    @AfterEach
    void allRan() {
        commands.assertAllConsumed();
    }

    private ScriptedCommandRunner.Expectation expectPreen() {
        return commands.expect("e2fsck -p " + DEVICE, c -> c.argv().equals(java.util.List.of("e2fsck", "-p",
                DEVICE.toString())) && c.timeout().equals(Ext4Preen.TIMEOUT));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void cleanOrCorrectedMayBeMounted(int status) {
        expectPreen().returns(status, "/dev/dm-3: 11/16384 files (0.0% non-contiguous), 9513/65536 blocks\n", "");
        assertDoesNotThrow(() -> preen.preen("vol", DEVICE));
    }

    @Test
    void errorsLeftUncorrectedAreFailedPreconditionNamingWhatE2fsckSaid() {
        expectPreen().returns(4, "/dev/dm-3: Root inode is not a directory.  \n\n/dev/dm-3: UNEXPECTED"
                + " INCONSISTENCY; RUN fsck MANUALLY.\n\t(i.e., without -a or -p options)\n", "");
        VolumeException e = assertThrows(VolumeException.class, () -> preen.preen("vol", DEVICE));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("exit 4"), e.getMessage());
        assertTrue(e.getMessage().contains("Root inode is not a directory. / /dev/dm-3: UNEXPECTED INCONSISTENCY"),
                e.getMessage());
        assertTrue(e.getMessage().contains("nothing was mounted"), e.getMessage());
        assertFalse(e.getMessage().contains("\n") || e.getMessage().contains("\t"), e.getMessage());
    }

    @Test
    void anOperationalErrorIsFailedPreconditionToo() {
        expectPreen().returns(8, "", "e2fsck: Device or resource busy while trying to open /dev/dm-3\n");
        VolumeException e = assertThrows(VolumeException.class, () -> preen.preen("vol", DEVICE));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("Device or resource busy"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(ints = {16, 32, 128})
    void aUsageErrorACancelOrALibraryErrorIsInternal(int status) {
        expectPreen().returns(status, "", "");
        assertEquals(VolumeException.Outcome.INTERNAL,
                assertThrows(VolumeException.class, () -> preen.preen("vol", DEVICE)).outcome());
    }

    @Test
    void aHungCheckIsStoppedAndInternal() {
        expectPreen().timesOut();
        VolumeException e = assertThrows(VolumeException.class, () -> preen.preen("vol", DEVICE));
        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("did not finish within 30 minutes"), e.getMessage());
    }

    @Test
    void whatE2fsckSaidIsEscapedAndBounded() {
        String said = Ext4Preen.summary(new dev.blocknode.os.exec.CommandResult(4,
                "Entry 'a\u001b[31mb' in / (2) has deleted/unused inode 12.\n" + "x".repeat(2000), ""));
        assertFalse(said.contains("\u001b"), said);
        assertTrue(said.length() < Ext4Preen.SUMMARY_LIMIT + 64, said);
    }
}
