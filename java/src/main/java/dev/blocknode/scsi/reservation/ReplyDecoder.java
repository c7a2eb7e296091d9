package dev.blocknode.scsi.reservation;

import dev.blocknode.os.block.ScsiPassThrough;

import java.util.Optional;

/**
 * What an SG_IO reply means for a command: GOOD, a RESERVATION CONFLICT, a command the device does not
 * support, a UNIT ATTENTION to retry (a reset, a login, "registrations preempted": news, not a refusal), or a
 * failure of the path or the device. Linux reports a conflict both as status 18h and as host status
 * DID_NEXUS_FAILURE (the midlayer's "reservation conflict"), so either counts.
 */
public final class ReplyDecoder {

    public enum Verdict { GOOD, RESERVATION_CONFLICT, NOT_SUPPORTED, UNIT_ATTENTION, FAILED }

    public static final int GOOD = 0x00;
    public static final int CHECK_CONDITION = 0x02;
    public static final int RESERVATION_CONFLICT = 0x18;
    /** Linux's host byte for a reservation conflict (include/scsi/scsi_status.h). */
    public static final int DID_NEXUS_FAILURE = 0x11;

    private ReplyDecoder() {
    }

    public static Verdict verdict(ScsiPassThrough.Reply reply) {
        if (reply.status() == RESERVATION_CONFLICT || reply.hostStatus() == DID_NEXUS_FAILURE) {
            return Verdict.RESERVATION_CONFLICT;
        }
        if (reply.hostStatus() != 0) {
            return Verdict.FAILED;
        }
        if (reply.status() == CHECK_CONDITION) {
            Optional<Sense> sense = Sense.parse(reply.sense());
            if (sense.isPresent() && sense.get().key() == Sense.ILLEGAL_REQUEST) {
                return Verdict.NOT_SUPPORTED;
            }
            if (sense.isPresent() && sense.get().key() == Sense.UNIT_ATTENTION) {
                return Verdict.UNIT_ATTENTION;
            }
            return Verdict.FAILED;
        }
        return reply.status() == GOOD ? Verdict.GOOD : Verdict.FAILED;
    }

    /** For a message: the status, host and driver status and the sense, as far as they say anything. */
    public static String describe(ScsiPassThrough.Reply reply) {
        StringBuilder text = new StringBuilder(String.format("status %02Xh", reply.status()));
        if (reply.hostStatus() != 0) {
            text.append(String.format(", host status %02Xh", reply.hostStatus()));
        }
        if (reply.driverStatus() != 0) {
            text.append(String.format(", driver status %02Xh", reply.driverStatus()));
        }
        Sense.parse(reply.sense()).ifPresent(sense -> text.append(", ").append(sense));
        return text.toString();
    }
}
