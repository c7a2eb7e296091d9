package dev.blocknode.volume.filesystem;

import dev.blocknode.logging.Printable;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.CommandTimeoutException;
import dev.blocknode.outcome.VolumeException;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.logging.Logger;

/**
 * The preen check of an ext4 filesystem before it is mounted ({@code e2fsck -p}): it replays the journal and fixes
 * what is safe to fix without asking, and stops at anything else. Its exit status is a bit mask (e2fsck(8)): 1, the
 * errors it corrected; 2, that a mounted root would need a reboot (meaningless for a volume that is not mounted
 * yet); 4, errors left uncorrected, which need an administrator's e2fsck; 8, an operational error (the device could
 * not be opened, or was busy); 16, 32 and 128 are a usage error, a cancel and a library error.
 */
public final class Ext4Preen {

    public static final String PROGRAM = "e2fsck";

    /**
     * How long a preen may run. A clean filesystem is only read for its superblock (milliseconds); one with
     * errors flagged, or not cleanly unmounted, is checked whole, in time that grows with its used inodes and
     * blocks (docs/design/performance.md: seconds for 10 GiB, so minutes for a few TiB and longer for a large,
     * full one). A check cut short fixes nothing and the next stage starts it over, so a limit below the check's
     * length would refuse the volume for ever: this one is there only to free the volume's operation from a
     * check that hangs (a device that stopped answering), not to bound a slow one. kubelet's own deadline does
     * not matter: the call finishes, and its retries are ABORTED meanwhile.
     */
    public static final Duration TIMEOUT = Duration.ofMinutes(30);

    /** The most of e2fsck's own words a status message and a log line quote. */
    static final int SUMMARY_LIMIT = 512;

    private static final Logger LOG = Logger.getLogger(Ext4Preen.class.getName());

    private static final int CORRECTED = 1;
    private static final int REBOOT = 2;
    private static final int UNCORRECTED = 4;
    private static final int OPERATIONAL_ERROR = 8;

    private final CommandRunner commands;

    public Ext4Preen(CommandRunner commands) {
        this.commands = commands;
    }

    public static Command command(Path device) {
        return Command.of(PROGRAM, "-p", device.toString()).withTimeout(TIMEOUT);
    }

    /**
     * Preens the ext4 filesystem on {@code device}; returns when it can be mounted.
     *
     * @throws VolumeException FAILED_PRECONDITION when it needs a manual repair or e2fsck could not check it,
     *                         naming what e2fsck said; INTERNAL when e2fsck could not run or did not finish
     */
    public void preen(String volumeId, Path device) throws VolumeException {
        Command fsck = command(device);
        CommandResult result;
        try {
            result = Phases.time("fsck", () -> commands.run(fsck));
        } catch (CommandTimeoutException e) {
            throw VolumeException.internal("e2fsck -p of device " + device + " of volume " + volumeId
                    + " did not finish within " + TIMEOUT.toMinutes() + " minutes and was stopped; nothing was"
                    + " mounted", e);
        } catch (IOException e) {
            throw VolumeException.internal("cannot run e2fsck -p on device " + device + " of volume " + volumeId, e);
        }
        int status = result.exitCode();
        String said = summary(result);
        if ((status & UNCORRECTED) != 0) {
            throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds an ext4"
                    + " filesystem with errors e2fsck -p cannot repair (exit " + status + "): " + said + "; an"
                    + " administrator must run e2fsck on it; nothing was mounted");
        }
        if ((status & OPERATIONAL_ERROR) != 0) {
            throw VolumeException.precondition("e2fsck -p could not check device " + device + " of volume "
                    + volumeId + " (exit " + status + "): " + said + "; nothing was mounted");
        }
        if ((status & ~(CORRECTED | REBOOT)) != 0) {
            throw VolumeException.internal("e2fsck -p of device " + device + " of volume " + volumeId
                    + " failed (exit " + status + "): " + said, null);
        }
        if (status != 0) {
            LOG.warning(() -> "e2fsck -p corrected errors on device " + device + " of volume " + volumeId
                    + " before mounting it (exit " + status + "): " + said);
        }
    }

    /** e2fsck's own lines, one after the other, escaped and bounded: it names the device and what it found. */
    static String summary(CommandResult result) {
        String joined = String.join(" / ", Arrays.stream((result.stdout() + "\n" + result.stderr()).split("\n"))
                .map(String::strip).filter(line -> !line.isEmpty()).toList());
        return Printable.bounded(joined.isEmpty() ? "(no output)" : joined, SUMMARY_LIMIT);
    }
}
