package dev.blocknode.volume.encryption;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.volume.filesystem.DeviceContent;
import dev.blocknode.volume.filesystem.DeviceProbe;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real cryptsetup on a real loop device: it takes Luks2's options, writes a LUKS2 header with the bounded Argon2id
 * costs, the stage's probe sees the header (so the blank check never formats over it), and the passphrase, read from
 * standard input only, is checked without opening anything. Opening needs device-mapper, which this tier's kernel may
 * lack: that part runs only where dm_mod is loaded (the VM tier's scenario iscsi-luks covers it).
 */
@Tag("host")
class Luks2HostTest {

    private static final String KEY = "host-test-canary-" + System.nanoTime();
    private static final long SIZE = 64L << 20;

    @TempDir
    Path dir;

    /** Every command the test runs, for the check that none carried the passphrase in its argv. */
    private final List<Command> ran = new ArrayList<>();
    private final CommandRunner commands = new CommandRunner() {
        private final ProcessCommandRunner real = new ProcessCommandRunner();

        @Override
        public CommandResult run(Command command) throws dev.blocknode.os.exec.CommandException {
            ran.add(command);
            return real.run(command);
        }
    };
    private final Luks2 luks = new Luks2(commands);

    private static Passphrase passphrase(String value) throws VolumeException {
        return EncryptionKeys.passphrase(new AttachRequest("vol-luks", Map.of(EncryptionKeys.ENCRYPTION, "luks2"),
                Map.of(), new Secrets(Map.of(EncryptionKeys.PASSPHRASE, value)))).orElseThrow();
    }

    @Test
    void aBlankDeviceIsFormattedWithBoundedCostsAndTheKeyIsCheckedWithoutOpening() throws Exception {
        try (LoopDevice loop = LoopDevice.create(dir, "luks", SIZE)) {
            DeviceProbe probe = new DeviceProbe(commands);
            assertInstanceOf(DeviceContent.Blank.class, probe.probe(loop.device()));

            long start = System.nanoTime();
            luks.format("vol-luks", loop.device(), passphrase(KEY));
            long formatted = System.nanoTime();
            luks.checkPassphrase("vol-luks", loop.device(), passphrase(KEY));
            long checked = System.nanoTime();
            System.out.printf("luksFormat %d ms, passphrase check %d ms%n", (formatted - start) / 1_000_000,
                    (checked - formatted) / 1_000_000);

            DeviceContent found = probe.probe(loop.device());
            assertTrue(found instanceof DeviceContent.OtherSignature other && other.description().contains("crypto_LUKS"),
                    "the stage's blank check sees the header: " + found);

            String dump = commands.run(Command.of("cryptsetup", "luksDump", loop.device().toString())).stdout();
            for (String expected : List.of("Version:       \t2", "PBKDF:      argon2id", "Time cost:  4",
                    "Memory:     32768", "Threads:    1")) {
                assertTrue(dump.contains(expected), expected + " missing from luksDump:\n" + dump);
            }

            VolumeException wrong = assertThrows(VolumeException.class,
                    () -> luks.checkPassphrase("vol-luks", loop.device(), passphrase(KEY + "x")));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, wrong.outcome());
            VolumeException withNewline = assertThrows(VolumeException.class,
                    () -> luks.checkPassphrase("vol-luks", loop.device(), passphrase(KEY + "\n")),
                    "the passphrase is byte-exact: a trailing newline is another key");
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, withNewline.outcome());
        }
        for (Command command : ran) {
            assertFalse(String.join(" ", command.argv()).contains(KEY), "the passphrase in argv: " + command);
        }
    }

    @Test
    void aPlainFilesystemIsNoLuksDevice() throws Exception {
        try (LoopDevice loop = LoopDevice.create(dir, "plain", SIZE)) {
            new ProcessCommandRunner().runChecked(Command.of("mkfs.ext4", "-q", loop.device().toString()));
            VolumeException refused = assertThrows(VolumeException.class,
                    () -> luks.checkPassphrase("vol-luks", loop.device(), passphrase(KEY)));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
            assertTrue(refused.getMessage().contains("could not check"), refused.getMessage());
        }
    }

    @Test
    void openAndCloseWhereTheKernelHasDeviceMapper() throws Exception {
        // /dev/mapper/control can be there without the driver behind it (a container's /dev); the module is the test.
        Assumptions.assumeTrue(Files.exists(Path.of("/sys/module/dm_mod")), "no device-mapper in this kernel");
        String mapping = CryptMappingName.of("vol-luks-" + System.nanoTime());
        try (LoopDevice loop = LoopDevice.create(dir, "opened", SIZE)) {
            luks.format("vol-luks", loop.device(), passphrase(KEY));
            VolumeException wrong = assertThrows(VolumeException.class,
                    () -> luks.open("vol-luks", loop.device(), mapping, passphrase("not-" + KEY)));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, wrong.outcome());
            assertFalse(luks.isActive("vol-luks", mapping), "a wrong key opened a mapping");
            try {
                luks.open("vol-luks", loop.device(), mapping, passphrase(KEY));
                assertTrue(luks.isActive("vol-luks", mapping));
                assertTrue(Files.exists(Luks2.mappedDevice(mapping)));
            } finally {
                luks.close("vol-luks", mapping);
            }
            assertFalse(luks.isActive("vol-luks", mapping));
            luks.close("vol-luks", mapping); // closed already: done
        } catch (IOException e) {
            luks.close("vol-luks", mapping);
            throw e;
        }
    }
}
