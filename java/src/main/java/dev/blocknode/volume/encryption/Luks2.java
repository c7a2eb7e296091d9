package dev.blocknode.volume.encryption;

import dev.blocknode.logging.Printable;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.outcome.VolumeException;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The cryptsetup commands of an encrypted volume: format a blank device LUKS2, check a passphrase against it, open
 * it as its dm-crypt mapping, grow that mapping to its grown device, close it. The passphrase is only ever the command's standard input ({@code --key-file=-}): never an
 * argument, so never in /proc/PID/cmdline, a log line or a status message, which quote argv alone.
 * cryptsetup(8)'s exit codes: 1 wrong parameters, 2 no permission (a wrong passphrase), 3 out of memory, 4 wrong
 * device specified (for close and status: the mapping is not active), 5 the device already exists or is busy.
 */
public final class Luks2 {

    public static final String PROGRAM = "cryptsetup";

    /**
     * Argon2id with fixed costs, no benchmark: 4 passes over 32 MiB on one thread, above OWASP's listed
     * parameters, about 0.2 s to format and 0.1 s to unlock on a CI host, where cryptsetup's benchmarked default
     * took 12.7 s and 2 s with up to 1 GiB of memory (docs/design/encryption.md); the memory counts against the
     * plugin container's limit once per concurrent stage.
     */
    static final List<String> KEY_DERIVATION = List.of("--pbkdf", "argon2id", "--pbkdf-force-iterations", "4",
            "--pbkdf-memory", "32768", "--pbkdf-parallel", "1");

    /** Generous for the key derivation under emulation (a VM's TCG) and a slow device's header writes. */
    static final Duration TIMEOUT = Duration.ofMinutes(2);

    static final int WRONG_PASSPHRASE = 2;
    static final int NOT_ACTIVE = 4;

    private final CommandRunner commands;

    public Luks2(CommandRunner commands) {
        this.commands = commands;
    }

    /** The opened volume's device node. */
    public static Path mappedDevice(String mappingName) {
        return Path.of("/dev/mapper", mappingName);
    }

    /** Writes a LUKS2 header with the passphrase in its first key slot. The caller has found the device blank. */
    public void format(String volumeId, Path device, Passphrase passphrase) throws VolumeException {
        List<String> argv = new ArrayList<>(List.of(PROGRAM, "luksFormat", "--batch-mode", "--type", "luks2"));
        argv.addAll(KEY_DERIVATION);
        argv.addAll(List.of("--key-file=-", device.toString()));
        CommandResult result = run("luksFormat", volumeId, device, argv, passphrase);
        if (!result.succeeded()) {
            throw VolumeException.internal("cryptsetup luksFormat of device " + device + " of volume " + volumeId
                    + " failed (exit " + result.exitCode() + "): " + said(result), null);
        }
    }

    /**
     * Opens the LUKS2 device as {@code mappingName}. A wrong passphrase creates no mapping (cryptsetup checks the
     * key against the header's digest before it loads a table).
     *
     * @throws VolumeException FAILED_PRECONDITION for a passphrase no key slot accepts, or a mapping of that name
     *                         that is already there; INTERNAL for anything else
     */
    public void open(String volumeId, Path device, String mappingName, Passphrase passphrase)
            throws VolumeException {
        List<String> argv = List.of(PROGRAM, "open", "--type", "luks2", "--key-file=-", device.toString(),
                mappingName);
        CommandResult result = run("open", volumeId, device, argv, passphrase);
        if (result.succeeded()) {
            return;
        }
        if (result.exitCode() == WRONG_PASSPHRASE) {
            throw wrongPassphrase(volumeId, device);
        }
        throw VolumeException.precondition("cryptsetup open of device " + device + " of volume " + volumeId
                + " as " + mappingName + " failed (exit " + result.exitCode() + "): " + said(result));
    }

    /**
     * Checks the passphrase against the device's LUKS2 key slots without opening anything ({@code open
     * --test-passphrase}: no device-mapper table is loaded), so that a wrong one is refused before the stage changes
     * anything on the node.
     *
     * @throws VolumeException FAILED_PRECONDITION for a passphrase no key slot accepts, or a device cryptsetup does
     *                         not take for LUKS2; INTERNAL when cryptsetup cannot run
     */
    public void checkPassphrase(String volumeId, Path device, Passphrase passphrase) throws VolumeException {
        List<String> argv = List.of(PROGRAM, "open", "--test-passphrase", "--type", "luks2", "--key-file=-",
                device.toString());
        CommandResult result = run("check", volumeId, device, argv, passphrase);
        if (result.succeeded()) {
            return;
        }
        if (result.exitCode() == WRONG_PASSPHRASE) {
            throw wrongPassphrase(volumeId, device);
        }
        throw VolumeException.precondition("cryptsetup could not check the passphrase of volume " + volumeId
                + " against device " + device + " (exit " + result.exitCode() + "): " + said(result));
    }

    /**
     * Grows the open mapping to what its device now holds (the device's size less the LUKS2 header's area). The
     * passphrase goes on stdin because cryptsetup needs the volume key to load the larger table, and a LUKS2 mapping
     * keeps that key in the kernel's keyring, where cryptsetup cannot read it back: it unlocks a key slot again.
     *
     * @throws VolumeException FAILED_PRECONDITION for a passphrase no key slot accepts (the mapping keeps its size);
     *                         INTERNAL for anything else
     */
    public void resize(String volumeId, String mappingName, Passphrase passphrase) throws VolumeException {
        List<String> argv = List.of(PROGRAM, "resize", "--key-file=-", mappingName);
        CommandResult result = run("resize", volumeId, null, argv, passphrase);
        if (result.succeeded()) {
            return;
        }
        if (result.exitCode() == WRONG_PASSPHRASE) {
            throw VolumeException.precondition("the " + EncryptionKeys.PASSPHRASE + " secret of NodeExpandVolume"
                    + " for volume " + volumeId + " opens no key slot of its LUKS2 header; dm-crypt mapping "
                    + mappingName + " and its filesystem were not grown");
        }
        throw VolumeException.internal("cryptsetup resize " + mappingName + " of volume " + volumeId
                + " failed (exit " + result.exitCode() + "): " + said(result), null);
    }

    private static VolumeException wrongPassphrase(String volumeId, Path device) {
        return VolumeException.precondition("the " + EncryptionKeys.PASSPHRASE + " secret of volume " + volumeId
                + " opens no key slot of the LUKS2 header on device " + device + "; nothing was opened");
    }

    /** True when the mapping exists (whatever it maps: the caller checks what it is over). */
    public boolean isActive(String volumeId, String mappingName) throws VolumeException {
        CommandResult result = run("status", volumeId, null, List.of(PROGRAM, "status", mappingName), null);
        if (result.succeeded()) {
            return true;
        }
        if (result.exitCode() == NOT_ACTIVE) {
            return false;
        }
        throw VolumeException.internal("cryptsetup status " + mappingName + " of volume " + volumeId
                + " failed (exit " + result.exitCode() + "): " + said(result), null);
    }

    /** Closes the mapping; one that is not there is closed already. */
    public void close(String volumeId, String mappingName) throws VolumeException {
        CommandResult result = run("close", volumeId, null, List.of(PROGRAM, "close", mappingName), null);
        if (result.succeeded() || result.exitCode() == NOT_ACTIVE) {
            return;
        }
        throw VolumeException.internal("cryptsetup close " + mappingName + " of volume " + volumeId
                + " failed (exit " + result.exitCode() + "): " + said(result), null);
    }

    private CommandResult run(String step, String volumeId, Path device, List<String> argv, Passphrase passphrase)
            throws VolumeException {
        Command command = new Command(argv, TIMEOUT, passphrase == null ? null : passphrase.bytes());
        try {
            return Phases.time("cryptsetup-" + step, () -> commands.run(command));
        } catch (IOException e) {
            throw VolumeException.internal("cannot run cryptsetup " + step + " for volume " + volumeId
                    + (device == null ? "" : " on device " + device), e);
        }
    }

    /** What cryptsetup printed, escaped and bounded; it never echoes a key file's content. */
    private static String said(CommandResult result) {
        String text = result.diagnostic();
        return Printable.bounded(text.isEmpty() ? "(no output)" : text, 512);
    }
}
