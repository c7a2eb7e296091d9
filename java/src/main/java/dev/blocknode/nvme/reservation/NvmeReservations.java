package dev.blocknode.nvme.reservation;

import dev.blocknode.nvme.reservation.ReservationCommands.AcquireAction;
import dev.blocknode.nvme.reservation.ReservationCommands.RegisterAction;
import dev.blocknode.nvme.reservation.ReservationCommands.ReleaseAction;
import dev.blocknode.os.block.NvmePassThrough;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * NVMe reservation commands sent to one namespace through its block device: what each action means is the NVMe
 * Base Specification's; which to send when is the fencing protocol's. The shape is
 * {@code scsi.reservation.PersistentReservations}'s, with one difference that matters to the protocol: an NVMe
 * registrant is a <em>host</em> (its Host Identifier), not a path, so every controller a node connected with the
 * same host identifier shares one registration, and a command through any path (the native multipath head's
 * current one) acts for them all. Each call returns on success and throws otherwise:
 * {@link NvmeCommandException.ReservationConflict}, {@link NvmeCommandException.NotSupported}, or the base class.
 */
public final class NvmeReservations {

    /** Descriptors a first report makes room for; a namespace with more registrants is asked again with room. */
    static final int REPORTED_REGISTRANTS = 32;

    private final NvmePassThrough nvme;
    private final NamespaceCheck check;
    private final Duration timeout;

    /**
     * @param check   asked of every device once it is opened, before any command goes to it
     * @param timeout per command: the kernel aborts it then, so a dead path cannot hold a caller longer
     */
    public NvmeReservations(NvmePassThrough nvme, NamespaceCheck check, Duration timeout) {
        this.nvme = nvme;
        this.check = check;
        this.timeout = timeout;
    }

    /**
     * Reservation Report: the generation, the reservation and every registrant with its key. Asked for the
     * extended structure first (128-bit host identifiers, what fabrics use); a controller that answers Host
     * Identifier Inconsistent Format is asked for the plain one, as Linux's own pr_ops do.
     */
    public ReservationStatus report(Path device) throws IOException {
        try (NvmePassThrough.Channel channel = open(device)) {
            boolean extended = true;
            int registrants = REPORTED_REGISTRANTS;
            for (int attempt = 0; ; attempt++) {
                int length = ReservationStatus.length(registrants, extended);
                NvmePassThrough.Reply reply = channel.send(ReservationCommands.report(length, extended, timeout));
                CompletionStatus status = new CompletionStatus(reply.status());
                if (extended && status.is(CompletionStatus.HOST_IDENTIFIER_INCONSISTENT_FORMAT)) {
                    extended = false;
                    continue;
                }
                check(status, device, "Reservation Report");
                ReservationStatus parsed = ReservationStatus.parse(reply.data(), extended);
                if (parsed.complete() || attempt > 0) {
                    return parsed;
                }
                registrants = parsed.registrantCount();
            }
        }
    }

    /**
     * Register (action 000b): this host is registered with {@code key}. Succeeds when it already is with that
     * key; a conflict when it is with another.
     */
    public void register(Path device, long key) throws IOException {
        send(device, ReservationCommands.register(RegisterAction.REGISTER, false, 0, key, timeout),
                "Reservation Register (register)");
    }

    /**
     * Replace (010b): this host's key {@code current} becomes {@code next}, the renewal's step. A host not
     * registered, or registered with another key, gets a conflict: a host another node preempted cannot
     * register itself back by renewing.
     */
    public void replace(Path device, long current, long next) throws IOException {
        send(device, ReservationCommands.register(RegisterAction.REPLACE, false, current, next, timeout),
                "Reservation Register (replace)");
    }

    /**
     * This host registered with {@code key} whatever it had (0: unregistered), SCSI's REGISTER AND IGNORE
     * EXISTING KEY. NVMe has no single action for it: Replace with IEKEY needs a registration and Register
     * refuses another key, so Register is sent, and on a conflict Replace with IEKEY. Unregister with IEKEY
     * for 0, where a conflict means there was no registration, which is what was asked.
     */
    public void registerIgnoringExisting(Path device, long key) throws IOException {
        if (key == 0) {
            try {
                send(device, ReservationCommands.register(RegisterAction.UNREGISTER, true, 0, 0, timeout),
                        "Reservation Register (unregister, ignoring the existing key)");
            } catch (NvmeCommandException.ReservationConflict notRegistered) {
                // Nothing to take back: the host is unregistered, as asked.
            }
            return;
        }
        try {
            register(device, key);
        } catch (NvmeCommandException.ReservationConflict registeredWithAnotherKey) {
            send(device, ReservationCommands.register(RegisterAction.REPLACE, true, 0, key, timeout),
                    "Reservation Register (replace, ignoring the existing key)");
        }
    }

    /** Unregister (001b) this host's {@code key}; if it holds a registrants-only reservation, that is released. */
    public void unregister(Path device, long key) throws IOException {
        send(device, ReservationCommands.register(RegisterAction.UNREGISTER, false, key, 0, timeout),
                "Reservation Register (unregister)");
    }

    /** Acquire: this host, registered with {@code key}, takes the reservation with {@code type}. */
    public void acquire(Path device, long key, ReservationType type) throws IOException {
        send(device, ReservationCommands.acquire(AcquireAction.ACQUIRE, type, key, 0, timeout),
                "Reservation Acquire (acquire, type " + type.code() + ")");
    }

    /**
     * Preempt (or Preempt and Abort, which also aborts the preempted hosts' commands): every other host registered
     * with {@code victim} loses its registration; if {@code victim} holds the reservation, this host takes it
     * with {@code type}.
     */
    public void preempt(Path device, long key, long victim, ReservationType type, boolean abort) throws IOException {
        AcquireAction action = abort ? AcquireAction.PREEMPT_AND_ABORT : AcquireAction.PREEMPT;
        send(device, ReservationCommands.acquire(action, type, key, victim, timeout),
                "Reservation Acquire (" + action + ", type " + type.code() + ")");
    }

    /** Release: the reservation this host holds with {@code type} goes; registrations stay. */
    public void release(Path device, long key, ReservationType type) throws IOException {
        send(device, ReservationCommands.release(ReleaseAction.RELEASE, type, key, timeout),
                "Reservation Release (release, type " + type.code() + ")");
    }

    private void send(Path device, NvmePassThrough.Command command, String what) throws IOException {
        try (NvmePassThrough.Channel channel = open(device)) {
            check(new CompletionStatus(channel.send(command).status()), device, what);
        }
    }

    private NvmePassThrough.Channel open(Path device) throws IOException {
        NvmePassThrough.Channel channel = nvme.open(device);
        try {
            check.require(device, channel.number());
            return channel;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static void check(CompletionStatus status, Path device, String what) throws NvmeCommandException {
        if (status.succeeded()) {
            return;
        }
        String message = what + " on " + device + ": " + status.describe();
        if (status.is(CompletionStatus.RESERVATION_CONFLICT)) {
            throw new NvmeCommandException.ReservationConflict(message + " (reservation conflict)");
        }
        if (status.notSupported()) {
            throw new NvmeCommandException.NotSupported(message + " (not supported by the namespace)");
        }
        throw new NvmeCommandException(message);
    }
}
