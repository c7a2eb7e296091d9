package dev.blocknode.volume.encryption;

import dev.blocknode.os.exec.Command;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cryptsetup as Luks2 runs it: the passphrase on standard input and nowhere else, its exit codes read as documented. */
class Luks2UnitTest {

    private static final String KEY = "correct horse battery staple \n";
    private static final Path DEVICE = Path.of("/dev/dm-3");
    private static final String MAPPING = CryptMappingName.of("vol-1");

    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final Luks2 luks = new Luks2(commands);

    @AfterEach
    void allRan() {
        commands.assertAllConsumed();
        for (Command call : commands.calls()) {
            assertFalse(String.join(" ", call.argv()).contains(KEY.strip()), "the passphrase in argv: " + call);
            assertFalse(call.toString().contains(KEY.strip()), "the passphrase in a command's text: " + call);
        }
    }

    private static Passphrase passphrase() throws VolumeException {
        return EncryptionKeys.passphrase(new AttachRequest("vol-1", Map.of(EncryptionKeys.ENCRYPTION, "luks2"),
                Map.of(), new Secrets(Map.of(EncryptionKeys.PASSPHRASE, KEY)))).orElseThrow();
    }

    private static boolean keyOnStdin(Command c) {
        return java.util.Arrays.equals(c.stdin(), KEY.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void formatIsLuks2WithBoundedArgon2idAndTheKeyOnStandardInput() throws VolumeException {
        commands.expect("luksFormat", c -> c.argv().equals(List.of("cryptsetup", "luksFormat", "--batch-mode",
                "--type", "luks2", "--pbkdf", "argon2id", "--pbkdf-force-iterations", "4", "--pbkdf-memory", "32768",
                "--pbkdf-parallel", "1", "--key-file=-", DEVICE.toString())) && keyOnStdin(c)).succeeds("");
        luks.format("vol-1", DEVICE, passphrase());
        assertArrayEquals(KEY.getBytes(StandardCharsets.UTF_8), commands.calls().getFirst().stdin(),
                "byte for byte, the trailing newline included");
    }

    @Test
    void openReadsTheKeyFromStandardInput() {
        commands.expect("open", c -> c.argv().equals(List.of("cryptsetup", "open", "--type", "luks2",
                "--key-file=-", DEVICE.toString(), MAPPING)) && keyOnStdin(c)).succeeds("");
        assertDoesNotThrow(() -> luks.open("vol-1", DEVICE, MAPPING, passphrase()));
    }

    @Test
    void aWrongPassphraseIsFailedPreconditionWithNothingOpened() throws VolumeException {
        commands.expect("open", c -> c.argv().get(1).equals("open") && keyOnStdin(c))
                .fails(2, "No key available with this passphrase.\n");
        VolumeException e = assertThrows(VolumeException.class,
                () -> luks.open("vol-1", DEVICE, MAPPING, passphrase()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains(EncryptionKeys.PASSPHRASE) && e.getMessage().contains("nothing was opened"),
                e.getMessage());
        assertFalse(e.getMessage().contains(KEY.strip()), e.getMessage());
    }

    @Test
    void aPassphraseIsCheckedWithoutOpeningAnything() throws VolumeException {
        commands.expect("test-passphrase", c -> c.argv().equals(List.of("cryptsetup", "open", "--test-passphrase",
                "--type", "luks2", "--key-file=-", DEVICE.toString())) && keyOnStdin(c)).succeeds("");
        commands.expect("test-passphrase", c -> c.argv().contains("--test-passphrase") && keyOnStdin(c))
                .fails(2, "No key available with this passphrase.\n");
        commands.expect("test-passphrase", c -> c.argv().contains("--test-passphrase"))
                .fails(1, "Device /dev/dm-3 is not a valid LUKS device.\n");
        luks.checkPassphrase("vol-1", DEVICE, passphrase());
        VolumeException wrong = assertThrows(VolumeException.class,
                () -> luks.checkPassphrase("vol-1", DEVICE, passphrase()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, wrong.outcome());
        assertTrue(wrong.getMessage().contains("opens no key slot"), wrong.getMessage());
        VolumeException notLuks = assertThrows(VolumeException.class,
                () -> luks.checkPassphrase("vol-1", DEVICE, passphrase()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, notLuks.outcome());
        assertTrue(notLuks.getMessage().contains("not a valid LUKS device"), notLuks.getMessage());
    }

    @Test
    void anotherOpenFailureNamesWhatCryptsetupSaid() {
        commands.expect("open", c -> c.argv().get(1).equals("open"))
                .fails(5, "Device " + MAPPING + " already exists.\n");
        VolumeException e = assertThrows(VolumeException.class,
                () -> luks.open("vol-1", DEVICE, MAPPING, passphrase()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("exit 5") && e.getMessage().contains("already exists"), e.getMessage());
    }

    @Test
    void closeOfAMappingThatIsNotThereIsDone() {
        commands.expect("cryptsetup", "close", MAPPING).fails(4, "Device " + MAPPING + " is not active.\n");
        assertDoesNotThrow(() -> luks.close("vol-1", MAPPING));
    }

    @Test
    void aCloseThatFailsIsInternalAndCarriesNoStandardInput() {
        commands.expect("close", c -> c.argv().equals(List.of("cryptsetup", "close", MAPPING))
                && c.stdin().length == 0).fails(5, "Device " + MAPPING + " is still in use.\n");
        VolumeException e = assertThrows(VolumeException.class, () -> luks.close("vol-1", MAPPING));
        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("still in use"), e.getMessage());
    }

    @Test
    void statusTellsAnActiveMappingFromAnAbsentOne() throws VolumeException {
        commands.expect("cryptsetup", "status", MAPPING).succeeds("/dev/mapper/" + MAPPING + " is active.\n");
        commands.expect("cryptsetup", "status", MAPPING).fails(4, "/dev/mapper/" + MAPPING + " is inactive.\n");
        assertTrue(luks.isActive("vol-1", MAPPING));
        assertFalse(luks.isActive("vol-1", MAPPING));
    }
}
