package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tgt backend's commands and LUN bookkeeping, against a recording stand-in for tgtadm (this machine's
 * kernel has no SCSI, so there is no initiator to use a real tgtd with; the VM tier runs it for real:
 * test-e2e/vm/guest/sanity.sh).
 */
class TgtBackendUnitTest {

    private static final String IQN = "iqn.2024-01.dev.blocknode:sanity";
    private static final Path FILE = Path.of("/srv/luns/v.img");

    /** Records every argv; answers with what {@code answer} says (success by default). */
    private static final class RecordingTgtadm implements CommandRunner {
        final List<String> calls = new ArrayList<>();
        Function<String, CommandResult> answer = argv -> new CommandResult(0, "", "");

        @Override
        public CommandResult run(Command command) {
            assertTrue(command.timeout().toSeconds() > 0 && command.timeout().toSeconds() <= 30, "bounded");
            String argv = String.join(" ", command.argv());
            calls.add(argv);
            return answer.apply(argv);
        }
    }

    private final RecordingTgtadm tgtadm = new RecordingTgtadm();

    @Test
    void startCreatesAnOpenTargetAndEachVolumeIsALunWithItsIscsiContext() throws IOException {
        TgtBackend backend = TgtBackend.start(tgtadm, 3, IQN, List.of("127.0.0.1:3260", "127.0.0.2:3260"));
        VolumeBackend.Placement placement = backend.expose("v", FILE, 1 << 20);

        assertEquals(List.of(
                "tgtadm --lld iscsi --mode target --op new --tid 3 --targetname " + IQN,
                "tgtadm --lld iscsi --mode target --op bind --tid 3 --initiator-address ALL",
                "tgtadm --lld iscsi --mode logicalunit --op new --tid 3 --lun 1 --backing-store " + FILE),
                tgtadm.calls);
        // tgtd's NAA for target 3, LUN 1 is naa.60000000000000000e00000000030001 (the VM tier's measurement).
        assertEquals(Map.of("targetPortal", "127.0.0.1:3260", "portals", "127.0.0.2:3260", "iqn", IQN,
                "lun", "1", "wwid", "360000000000000000e00000000030001"), placement.volumeContext());
    }

    @Test
    void lunNumbersAreNotReusedAtOnceAndWrapAround() throws IOException {
        TgtBackend backend = TgtBackend.start(tgtadm, 1, IQN, List.of("127.0.0.1:3260"));
        VolumeBackend.Placement first = backend.expose("a", FILE, 1);
        VolumeBackend.Placement second = backend.expose("b", FILE, 1);
        backend.withdraw(first, FILE);
        assertEquals("3", backend.expose("c", FILE, 1).volumeContext().get("lun"), "not 1: it was just deleted");
        assertEquals(false, second.volumeContext().containsKey("portals"), "one portal: no portals key");

        for (int i = 4; i <= TgtBackend.MAX_LUN; i++) {
            backend.expose("v" + i, FILE, 1);
        }
        assertEquals("1", backend.expose("wrapped", FILE, 1).volumeContext().get("lun"), "the only free number");
        assertThrows(IOException.class, () -> backend.expose("full", FILE, 1));
    }

    @Test
    void withdrawIsIdempotentButRefusesALunInUse() throws IOException {
        TgtBackend backend = TgtBackend.start(tgtadm, 1, IQN, List.of("127.0.0.1:3260"));
        VolumeBackend.Placement placement = backend.expose("v", FILE, 1);

        tgtadm.answer = argv -> new CommandResult(22, "", "tgtadm: this logical unit is still active\n");
        VolumeBackend.InUseException e = assertThrows(VolumeBackend.InUseException.class,
                () -> backend.withdraw(placement, FILE));
        assertTrue(e.getMessage().contains("LUN 1 of " + IQN), e.getMessage());

        tgtadm.answer = argv -> new CommandResult(22, "", "tgtadm: can't find the logical unit\n");
        backend.withdraw(placement, FILE);

        tgtadm.answer = argv -> new CommandResult(107, "", "tgtadm: failed to send request hdr to tgt daemon\n");
        assertThrows(IOException.class, () -> backend.withdraw(placement, FILE));
    }

    @Test
    void growingAddsTheSameLunAgainOverTheGrownFile() throws IOException {
        TgtBackend backend = TgtBackend.start(tgtadm, 1, IQN, List.of("127.0.0.1:3260"));
        VolumeBackend.Placement placement = backend.expose("v", FILE, 1);
        tgtadm.calls.clear();

        assertEquals(placement, backend.grow(placement, FILE, 2), "same LUN, same WWID");
        assertEquals(List.of("tgtadm --lld iscsi --mode logicalunit --op delete --tid 1 --lun 1",
                "tgtadm --lld iscsi --mode logicalunit --op new --tid 1 --lun 1 --backing-store " + FILE),
                tgtadm.calls);
        backend.close();
        assertEquals("tgtadm --lld iscsi --mode target --op delete --tid 1", tgtadm.calls.getLast());
    }
}
