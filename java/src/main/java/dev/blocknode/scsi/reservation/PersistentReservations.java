package dev.blocknode.scsi.reservation;

import dev.blocknode.os.block.ScsiPassThrough;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.LunPathCheck;

import java.io.IOException;
import java.time.Duration;

/**
 * SCSI-3 persistent reservation commands sent down one path device, so through one I_T nexus: what each
 * service action means is SPC-4's; which to send when is the fencing protocol's (transport/san). Each call
 * returns on GOOD and throws otherwise: {@link ScsiCommandException.ReservationConflict},
 * {@link ScsiCommandException.NotSupported}, or the base class for a failed path or device. A UNIT ATTENTION
 * (a reset, a new login, "reservations preempted") only reports a change: the command is sent again, a few
 * times at most.
 */
public final class PersistentReservations {

    /** How often a command that met a UNIT ATTENTION is sent again (each attention is reported once). */
    static final int UNIT_ATTENTION_RETRIES = 4;

    private final ScsiPassThrough scsi;
    private final LunPathCheck check;
    private final Duration timeout;

    /**
     * @param check   asked of every path device once it is opened, before any command goes down it: a device
     *                whose name now belongs to another disk (a path lost and another disk probed since the
     *                path was listed) must never get a reservation command meant for this LUN
     * @param timeout per command: the midlayer aborts it then, so a dead path cannot hold a caller longer
     */
    public PersistentReservations(ScsiPassThrough scsi, LunPathCheck check, Duration timeout) {
        this.scsi = scsi;
        this.check = check;
        this.timeout = timeout;
    }

    public Reservation readReservation(LunPath device) throws IOException {
        return Reservation.parse(in(device, PrCommands.In.READ_RESERVATION, Reservation.ALLOCATION));
    }

    public RegisteredKeys readKeys(LunPath device) throws IOException {
        return RegisteredKeys.parse(in(device, PrCommands.In.READ_KEYS, RegisteredKeys.ALLOCATION));
    }

    public Capabilities reportCapabilities(LunPath device) throws IOException {
        return Capabilities.parse(in(device, PrCommands.In.REPORT_CAPABILITIES, Capabilities.ALLOCATION));
    }

    /** The target's vendor and product (standard INQUIRY), for the targets whose reservations misbehave. */
    public TargetProduct inquiry(LunPath device) throws IOException {
        ScsiPassThrough.Command command = new ScsiPassThrough.Command(TargetProduct.cdb(),
                ScsiPassThrough.Direction.FROM_DEVICE, new byte[TargetProduct.ALLOCATION], timeout);
        return TargetProduct.parse(send(device, command, "INQUIRY").data());
    }

    /**
     * REGISTER: a registered nexus replaces {@code current} by {@code next} (0: unregisters); a nexus whose key
     * is not {@code current} gets a conflict, and so does an unregistered one unless {@code current} is 0.
     */
    public void register(LunPath device, long current, long next) throws IOException {
        out(device, PrCommands.Out.REGISTER, null, current, next);
    }

    /** REGISTER AND IGNORE EXISTING KEY: the nexus is registered with {@code key} whatever it had (0: unregisters). */
    public void registerIgnoringExisting(LunPath device, long key) throws IOException {
        out(device, PrCommands.Out.REGISTER_AND_IGNORE_EXISTING_KEY, null, 0, key);
    }

    public void reserve(LunPath device, long key, PrType type) throws IOException {
        out(device, PrCommands.Out.RESERVE, type, key, 0);
    }

    public void release(LunPath device, long key, PrType type) throws IOException {
        out(device, PrCommands.Out.RELEASE, type, key, 0);
    }

    /**
     * PREEMPT (or PREEMPT AND ABORT, which also aborts the preempted nexuses' queued commands): every nexus
     * registered with {@code victim} but this one loses its registration; if {@code victim} holds the
     * reservation, this nexus takes it with {@code type}.
     */
    public void preempt(LunPath device, long key, long victim, PrType type, boolean abort) throws IOException {
        out(device, abort ? PrCommands.Out.PREEMPT_AND_ABORT : PrCommands.Out.PREEMPT, type, key, victim);
    }

    private byte[] in(LunPath device, PrCommands.In action, int allocation) throws IOException {
        ScsiPassThrough.Command command = new ScsiPassThrough.Command(PrCommands.in(action, allocation),
                ScsiPassThrough.Direction.FROM_DEVICE, new byte[allocation], timeout);
        return send(device, command, "PERSISTENT RESERVE IN " + action).data();
    }

    private void out(LunPath device, PrCommands.Out action, PrType type, long key, long serviceActionKey)
            throws IOException {
        ScsiPassThrough.Command command = new ScsiPassThrough.Command(PrCommands.out(action, type),
                ScsiPassThrough.Direction.TO_DEVICE, PrCommands.parameters(key, serviceActionKey), timeout);
        send(device, command, "PERSISTENT RESERVE OUT " + action + (type == null ? "" : " type " + type.code()));
    }

    private ScsiPassThrough.Reply send(LunPath device, ScsiPassThrough.Command command, String what)
            throws IOException {
        try (ScsiPassThrough.Channel channel = scsi.open(device.device())) {
            check.require(device, channel.number());
            return send(channel, device, command, what);
        }
    }

    private static ScsiPassThrough.Reply send(ScsiPassThrough.Channel channel, LunPath device,
                                              ScsiPassThrough.Command command, String what) throws IOException {
        for (int attempt = 0; ; attempt++) {
            ScsiPassThrough.Reply reply = channel.send(command);
            ReplyDecoder.Verdict verdict = ReplyDecoder.verdict(reply);
            String message = what + " on " + device + ": " + ReplyDecoder.describe(reply);
            switch (verdict) {
                case GOOD:
                    return reply;
                case UNIT_ATTENTION:
                    if (attempt < UNIT_ATTENTION_RETRIES) {
                        continue;
                    }
                    throw new ScsiCommandException(message + " (still, after " + attempt + " retries)");
                case RESERVATION_CONFLICT:
                    throw new ScsiCommandException.ReservationConflict(message + " (reservation conflict)");
                case NOT_SUPPORTED:
                    throw new ScsiCommandException.NotSupported(message + " (not supported by the device)");
                default:
                    throw new ScsiCommandException(message);
            }
        }
    }
}
