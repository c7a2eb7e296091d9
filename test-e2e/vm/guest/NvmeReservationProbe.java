import dev.blocknode.nvme.reservation.NvmeCommandException;
import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.nvme.reservation.ReservationStatus;
import dev.blocknode.os.block.NvmePassThrough;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

import static dev.blocknode.nvme.reservation.ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;

/**
 * The NVMe reservation commands (nvme.reservation.NvmeReservations) through the real passthrough ioctl against the
 * kernel's nvmet, in the guest of nvme-reservations.sh: two hosts (two controllers with their own host identifiers,
 * nvme_core.multipath=N, so each is its own block device) on one namespace. Each step prints PASS or FAIL; the exit
 * status is the number of failures. Writes are dd's (O_DIRECT), so what the target refuses is seen as a writer sees
 * it.
 *
 *   java -cp CLASSES NvmeReservationProbe DEVICE_OF_HOST_A DEVICE_OF_HOST_B
 */
public final class NvmeReservationProbe {

    private static final long KEY_A = 0xa1a1a1a1a1a10001L;
    private static final long KEY_B = 0xb2b2b2b2b2b20001L;
    private static int failures;

    public static void main(String[] args) throws Exception {
        Path a = Path.of(args[0]);
        Path b = Path.of(args[1]);
        NvmeReservations r = new NvmeReservations(NvmePassThrough.IOCTL, (device, opened) -> { },
                Duration.ofSeconds(10));

        r.register(a, KEY_A);
        r.acquire(a, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        ReservationStatus held = report(r, b, "after A registered and acquired type 3, read through B");
        check("A holds type 3", held.holder().map(h -> h.key() == KEY_A).orElse(false)
                && held.type().equals(java.util.Optional.of(WRITE_EXCLUSIVE_REGISTRANTS_ONLY)));
        check("A writes", write(a));
        check("B's write is refused at the target", !write(b));

        r.register(b, KEY_B);
        r.preempt(b, KEY_B, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true);
        ReservationStatus taken = report(r, a, "after B preempted (and aborted) A's key, read through A");
        check("B holds, A's key is gone", taken.holder().map(h -> h.key() == KEY_B).orElse(false)
                && !taken.keys().contains(KEY_A));
        check("A's renewal (Replace) is a reservation conflict", conflicts(() -> r.replace(a, KEY_A, KEY_A + 1)));
        check("A's write is refused at the target", !write(a));
        check("B writes", write(b));

        r.registerIgnoringExisting(b, KEY_B + 1);
        check("B's key replaced ignoring the existing one", report(r, a, "after B's register-ignoring")
                .holder().map(h -> h.key() == KEY_B + 1).orElse(false));
        r.registerIgnoringExisting(b, 0);
        ReservationStatus released = report(r, a, "after B unregistered");
        check("nothing held, nothing registered", released.type().isEmpty() && released.registrants().isEmpty());
        check("A writes again", write(a));
        System.out.println("probe: " + failures + " failed");
        System.exit(failures);
    }

    private interface Step {
        void run() throws IOException;
    }

    private static boolean conflicts(Step step) throws IOException {
        try {
            step.run();
            return false;
        } catch (NvmeCommandException.ReservationConflict expected) {
            System.out.println("  (" + expected.getMessage() + ")");
            return true;
        }
    }

    private static ReservationStatus report(NvmeReservations r, Path device, String when) throws IOException {
        ReservationStatus status = r.report(device);
        System.out.println("report " + when + ": generation " + status.generation() + ", type "
                + status.type().map(Enum::name).orElse("none") + ", registrants " + status.registrants().stream()
                .map(reg -> String.format("host %s key %016x%s", reg.hostId(), reg.key(),
                        reg.holdsReservation() ? " (holder)" : "")).toList());
        return status;
    }

    private static boolean write(Path device) throws IOException, InterruptedException {
        Process dd = new ProcessBuilder("dd", "if=/dev/zero", "of=" + device, "bs=4096", "count=1", "oflag=direct",
                "conv=notrunc").redirectErrorStream(true).start();
        String output = new String(dd.getInputStream().readAllBytes()).strip().replace('\n', ' ');
        int status = dd.waitFor();
        System.out.println("  dd to " + device + ": exit " + status + (status == 0 ? "" : " (" + output + ")"));
        return status == 0;
    }

    private static void check(String what, boolean passed) {
        System.out.println((passed ? "PASS " : "FAIL ") + what);
        if (!passed) {
            failures++;
        }
    }
}
