package dev.blocknode.scsi.reservation;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.ScsiPassThrough;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.Wwid;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The client over a scripted SG_IO: what it sends, and how it reads what comes back. */
class PersistentReservationsUnitTest {

    private static final HexFormat HEX = HexFormat.of();
    private static final LunPath SDB = new LunPath(Path.of("/dev/sdb"), Wwid.naa("600140512345678901234567890abcde"));
    private static final DeviceNumber SDB_NUMBER = new DeviceNumber(8, 16);
    private static final byte[] NO_SENSE = new byte[0];

    private final Deque<ScsiPassThrough.Reply> replies = new ArrayDeque<>();
    private final List<ScsiPassThrough.Command> sent = new ArrayList<>();
    private final List<String> events = new ArrayList<>();
    private final ScsiPassThrough scsi = device -> {
        assertEquals(SDB.device(), device);
        events.add("open");
        return new ScsiPassThrough.Channel() {
            @Override
            public DeviceNumber number() {
                return SDB_NUMBER;
            }

            @Override
            public ScsiPassThrough.Reply send(ScsiPassThrough.Command command) {
                events.add("send");
                sent.add(command);
                return replies.removeFirst();
            }

            @Override
            public void close() {
                events.add("close");
            }
        };
    };
    private final PersistentReservations pr = new PersistentReservations(scsi, (path, opened) -> {
        assertEquals(SDB, path);
        assertEquals(SDB_NUMBER, opened);
        events.add("check");
    }, Duration.ofSeconds(10));

    @Test
    void eachCommandOpensThePathChecksWhatWasOpenedSendsAndCloses() throws Exception {
        replies.add(good(new byte[0]));
        pr.register(SDB, 0, 1);
        assertEquals(List.of("open", "check", "send", "close"), events);
    }

    @Test
    void aPathThatLeadsElsewhereOnceOpenedGetsNoCommandAndIsClosed() {
        PersistentReservations refusing = new PersistentReservations(scsi, (path, opened) -> {
            throw new IOException("path device " + path + " leads to another LUN now");
        }, Duration.ofSeconds(10));

        IOException e = assertThrows(IOException.class, () -> refusing.preempt(SDB, 1, 2,
                PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true));
        assertTrue(e.getMessage().contains("another LUN"), e.getMessage());
        assertEquals(List.of("open", "close"), events);
        assertTrue(sent.isEmpty());
    }

    @Test
    void registerSendsTheCdbAndBothKeysWithItsTimeout() throws Exception {
        replies.add(good(new byte[0]));
        pr.register(SDB, 0x1111111111110001L, 0x1111111111110002L);
        ScsiPassThrough.Command command = sent.get(0);
        assertEquals("5f000000000000001800", HEX.formatHex(command.cdb()));
        assertEquals(ScsiPassThrough.Direction.TO_DEVICE, command.direction());
        assertEquals("1111111111110001111111111111000200000000" + "00000000", HEX.formatHex(command.data()));
        assertEquals(Duration.ofSeconds(10), command.timeout());
    }

    @Test
    void readReservationReceivesIntoABufferAndParsesWhatArrived() throws Exception {
        replies.add(good(HEX.parseHex("0000000900000010" + "a1a2a3a4a5a60003" + "00000000" + "0005" + "0000")));
        Reservation reservation = pr.readReservation(SDB);
        assertEquals(0xa1a2a3a4a5a60003L, reservation.held().orElseThrow().key());
        assertEquals(ScsiPassThrough.Direction.FROM_DEVICE, sent.get(0).direction());
        assertEquals(Reservation.ALLOCATION, sent.get(0).data().length);
    }

    @Test
    void aReservationConflictIsTypedWhetherTheStatusOrLinuxsHostByteSaysIt() {
        replies.add(new ScsiPassThrough.Reply(0x18, 0, 0, new byte[0], NO_SENSE));
        ScsiCommandException.ReservationConflict byStatus = assertThrows(ScsiCommandException.ReservationConflict.class,
                () -> pr.reserve(SDB, 1, PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY));
        assertTrue(byStatus.getMessage().contains("PERSISTENT RESERVE OUT RESERVE type 5 on /dev/sdb: status 18h"),
                byStatus.getMessage());

        replies.add(new ScsiPassThrough.Reply(0x18, 0x11, 0, new byte[0], NO_SENSE));
        assertThrows(ScsiCommandException.ReservationConflict.class, () -> pr.register(SDB, 1, 2));
    }

    @Test
    void illegalRequestIsNotSupported() {
        replies.add(checkCondition("7000050000000010000000002600"));
        ScsiCommandException.NotSupported e = assertThrows(ScsiCommandException.NotSupported.class,
                () -> pr.preempt(SDB, 1, 2, PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true));
        assertTrue(e.getMessage().contains("PREEMPT_AND_ABORT"), e.getMessage());
        assertEquals("5f050500000000001800", HEX.formatHex(sent.get(0).cdb()));
    }

    @Test
    void aUnitAttentionIsNewsAndTheCommandIsSentAgain() throws Exception {
        replies.add(checkCondition("70000600000000100000000029000000")); // power on, reset
        replies.add(checkCondition("7000060000000010000000002a030000")); // reservations preempted
        replies.add(good(HEX.parseHex("0000000100000000")));
        assertEquals(List.of(), pr.readKeys(SDB).keys());
        assertEquals(3, sent.size());
    }

    @Test
    void unitAttentionsWithoutEndFailTheCommand() {
        for (int i = 0; i <= PersistentReservations.UNIT_ATTENTION_RETRIES; i++) {
            replies.add(checkCondition("70000600000000100000000029000000"));
        }
        ScsiCommandException e = assertThrows(ScsiCommandException.class, () -> pr.readKeys(SDB));
        assertEquals(ScsiCommandException.class, e.getClass());
    }

    @Test
    void aPathThatFailedOnTheWayIsAPlainFailureNamingTheHostStatus() {
        replies.add(new ScsiPassThrough.Reply(0, 0x03, 0, new byte[0], NO_SENSE)); // DID_TIME_OUT
        ScsiCommandException e = assertThrows(ScsiCommandException.class, () -> pr.readKeys(SDB));
        assertEquals(ScsiCommandException.class, e.getClass());
        assertTrue(e.getMessage().endsWith("status 00h, host status 03h"), e.getMessage());
    }

    private static ScsiPassThrough.Reply good(byte[] data) {
        return new ScsiPassThrough.Reply(0, 0, 0, data, NO_SENSE);
    }

    private static ScsiPassThrough.Reply checkCondition(String sense) {
        return new ScsiPassThrough.Reply(0x02, 0, 0x08, new byte[0], HEX.parseHex(sense));
    }
}
