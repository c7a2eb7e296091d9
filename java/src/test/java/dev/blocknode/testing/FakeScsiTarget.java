package dev.blocknode.testing;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.ScsiPassThrough;
import dev.blocknode.scsi.LunPathCheck;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One LUN of an array as SPC-4's persistent reservations model it, in memory, behind the path devices that reach
 * it: each path device is an I_T nexus, with its own registration. It decodes the CDBs itself (not with the code
 * under test), keeps registrations per nexus, the holder and its type, the PRgeneration, and answers WRITE(10) by
 * type 5's rule (only registered nexuses may write, anyone may read). What the machine lacks, as FakeSysfs is for
 * disks: tests drive the real fencing protocol against it and read the target's state back.
 *
 * <p>Faults: PR not supported at all, type 5 missing from REPORT CAPABILITIES (and refused), PREEMPT AND ABORT not
 * supported (as tgt), a dead path (the transport fails the command), a nexus that refuses REGISTER, a hook run
 * before a command (a racer).
 */
public final class FakeScsiTarget implements ScsiPassThrough {

    public static final int GOOD = 0x00;
    public static final int CHECK_CONDITION = 0x02;
    public static final int RESERVATION_CONFLICT = 0x18;
    public static final int DID_NO_CONNECT = 0x01;

    /** A command as the target saw it: which nexus, which opcode and service action. */
    public record Seen(String nexus, int opcode, int serviceAction, int type, long key, long serviceActionKey) {
    }

    private final Map<Path, String> nexusOf = new HashMap<>();
    private final Map<Path, DeviceNumber> numberOf = new HashMap<>();
    private final Set<Path> leadingElsewhere = new HashSet<>();
    private final Set<String> refusingRegistrations = new HashSet<>();
    private int openChannels;
    private final Map<String, Long> registrations = new LinkedHashMap<>();
    private final List<Seen> log = new ArrayList<>();
    private final List<String> dead = new ArrayList<>();
    private final Map<String, Consumer<Seen>> before = new HashMap<>();
    private String holder;
    private int holderType;
    private long generation;
    private boolean prSupported = true;
    private boolean type5Supported = true;
    private boolean preemptAndAbortSupported = true;
    private final List<String> aborted = new ArrayList<>();
    private String vendor = "LIO-ORG";
    private String product = "FAKE";

    /** {@code device} reaches the LUN through the I_T nexus {@code nexus} (say "nodeA-path1"). */
    public synchronized FakeScsiTarget path(Path device, String nexus) {
        nexusOf.put(device, nexus);
        numberOf.putIfAbsent(device, new DeviceNumber(8, 16L * numberOf.size()));
        return this;
    }

    /** As {@link #path(Path, String)}, with the device number sysfs gives the disk (checked when it is opened). */
    public synchronized FakeScsiTarget path(Path device, String nexus, DeviceNumber number) {
        nexusOf.put(device, nexus);
        numberOf.put(device, number);
        return this;
    }

    /** Every REGISTER through {@code nexus} gets a RESERVATION CONFLICT from now on (a target that refuses it). */
    public synchronized void refusesRegistrations(String nexus) {
        refusingRegistrations.add(nexus);
    }

    /**
     * From now on {@code device}'s name belongs to a disk of another LUN (a path lost and another disk probed):
     * {@link #check()} refuses it once it is opened, as sysfs would tell.
     */
    public synchronized void leadsElsewhere(Path device) {
        leadingElsewhere.add(device);
    }

    /** What sysfs would say of an opened path device: this LUN's while it is a path of it, else refused. */
    public LunPathCheck check() {
        return (path, opened) -> {
            synchronized (this) {
                if (!opened.equals(numberOf.get(path.device())) || leadingElsewhere.contains(path.device())) {
                    throw new IOException("path device " + path.device() + " leads to another LUN now");
                }
            }
        };
    }

    /**
     * The target restarts without persisting its reservations (APTPL off): every registration and the reservation
     * are gone, and the PRgeneration is back at zero, as SPC-4 has it at power-on.
     */
    public synchronized void restartWithoutReservations() {
        registrations.clear();
        holder = null;
        holderType = 0;
        generation = 0;
    }

    /** Channels opened and not closed yet. */
    public synchronized int openChannels() {
        return openChannels;
    }

    /** What the standard INQUIRY names (LIO-ORG FAKE until set). */
    public synchronized FakeScsiTarget product(String vendor, String product) {
        this.vendor = vendor;
        this.product = product;
        return this;
    }

    public synchronized void withoutPersistentReservations() {
        prSupported = false;
    }

    public synchronized void withoutType5() {
        type5Supported = false;
    }

    public synchronized void withoutPreemptAndAbort() {
        preemptAndAbortSupported = false;
    }

    /** Commands through this nexus fail in the transport from now on (a cable pulled), or work again. */
    public synchronized void dead(String nexus, boolean isDead) {
        if (isDead) {
            dead.add(nexus);
        } else {
            dead.remove(nexus);
        }
    }

    /** Runs {@code hook} once, just before the next PERSISTENT RESERVE OUT of {@code serviceAction} from {@code nexus}. */
    public synchronized void beforeOut(String nexus, int serviceAction, Consumer<Seen> hook) {
        before.put(nexus + "/" + serviceAction, hook);
    }

    public synchronized Map<String, Long> registrations() {
        return Map.copyOf(registrations);
    }

    public synchronized Optional<String> holder() {
        return Optional.ofNullable(holder);
    }

    public synchronized Optional<Long> holderKey() {
        return holder == null ? Optional.empty() : Optional.ofNullable(registrations.get(holder));
    }

    public synchronized int holderType() {
        return holderType;
    }

    public synchronized List<Seen> log() {
        return List.copyOf(log);
    }

    /** Nexuses whose commands a PREEMPT AND ABORT aborted. */
    public synchronized List<String> aborted() {
        return List.copyOf(aborted);
    }

    /** Whether a WRITE through {@code nexus} would reach the medium now (type 5: registrants, or no reservation). */
    public synchronized boolean writeAllowed(String nexus) {
        return holder == null || registrations.containsKey(nexus);
    }

    @Override
    public synchronized Channel open(Path device) throws IOException {
        if (!nexusOf.containsKey(device)) {
            throw new NoSuchFileException(device.toString());
        }
        openChannels++;
        DeviceNumber number = numberOf.get(device);
        return new Channel() {
            private boolean closed;

            @Override
            public DeviceNumber number() {
                return number;
            }

            @Override
            public Reply send(Command command) throws IOException {
                if (closed) {
                    throw new IOException("channel of " + device + " is closed");
                }
                return FakeScsiTarget.this.send(device, command);
            }

            @Override
            public void close() {
                synchronized (FakeScsiTarget.this) {
                    if (!closed) {
                        closed = true;
                        openChannels--;
                    }
                }
            }
        };
    }

    private Reply send(Path device, Command command) throws IOException {
        Consumer<Seen> hook;
        Seen seen;
        synchronized (this) {
            String nexus = nexusOf.get(device);
            if (nexus == null) {
                throw new NoSuchFileException(device.toString());
            }
            byte[] cdb = command.cdb();
            byte[] data = command.data();
            ByteBuffer parameters = ByteBuffer.wrap(data.length >= 16 ? data : new byte[16]);
            seen = new Seen(nexus, cdb[0] & 0xff, cdb[1] & 0x1f, cdb[2] & 0x0f, parameters.getLong(0),
                    parameters.getLong(8));
            hook = seen.opcode() == 0x5f ? before.remove(nexus + "/" + seen.serviceAction()) : null;
        }
        if (hook != null) {
            hook.accept(seen);
        }
        synchronized (this) {
            log.add(seen);
            if (dead.contains(seen.nexus())) {
                return new Reply(0, DID_NO_CONNECT, 0, new byte[0], new byte[0]);
            }
            return switch (seen.opcode()) {
                case 0x5e -> in(seen, command.data().length);
                case 0x5f -> out(seen);
                case 0x12 -> good(inquiry(command.data().length));
                case 0x2a -> writeAllowed(seen.nexus()) ? good(new byte[0]) : conflict();
                default -> illegal(0x20); // INVALID COMMAND OPERATION CODE
            };
        }
    }

    /** Standard INQUIRY data: a disk (type 0), SPC-4, vendor and product space-padded at bytes 8 and 16. */
    private byte[] inquiry(int allocation) {
        byte[] data = new byte[36];
        java.util.Arrays.fill(data, 8, 36, (byte) ' ');
        data[2] = 0x06;
        data[4] = 31;
        byte[] v = vendor.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] p = product.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        System.arraycopy(v, 0, data, 8, Math.min(8, v.length));
        System.arraycopy(p, 0, data, 16, Math.min(16, p.length));
        return java.util.Arrays.copyOf(data, Math.min(allocation, data.length));
    }

    private Reply in(Seen seen, int allocation) {
        if (!prSupported) {
            return illegal(0x20);
        }
        ByteBuffer out = ByteBuffer.allocate(Math.max(allocation, 8 + 8 * registrations.size()));
        switch (seen.serviceAction()) {
            case 0x00 -> {
                out.putInt((int) generation).putInt(8 * registrations.size());
                registrations.values().forEach(out::putLong);
            }
            case 0x01 -> {
                out.putInt((int) generation);
                if (holder == null) {
                    out.putInt(0);
                } else {
                    out.putInt(0x10).putLong(registrations.get(holder)).putInt(0).put((byte) 0)
                            .put((byte) holderType).putShort((short) 0);
                }
            }
            case 0x02 -> out.putShort((short) 8).put((byte) 0).put((byte) 0x80)
                    .put((byte) (type5Supported ? 0xeb : 0x0a)).put((byte) 0x01).putShort((short) 0);
            default -> {
                return illegal(0x24);
            }
        }
        byte[] all = out.array();
        byte[] data = new byte[Math.min(allocation, all.length)];
        System.arraycopy(all, 0, data, 0, data.length);
        return good(data);
    }

    private Reply out(Seen seen) {
        if (!prSupported) {
            return illegal(0x20);
        }
        String nexus = seen.nexus();
        Long registered = registrations.get(nexus);
        switch (seen.serviceAction()) {
            case 0x00, 0x06 -> { // REGISTER, REGISTER AND IGNORE EXISTING KEY
                boolean ignore = seen.serviceAction() == 0x06;
                if (refusingRegistrations.contains(nexus)) {
                    return conflict();
                }
                if (registered == null) {
                    if (!ignore && seen.key() != 0) {
                        return conflict();
                    }
                    if (seen.serviceActionKey() != 0) {
                        registrations.put(nexus, seen.serviceActionKey());
                    }
                } else {
                    if (!ignore && registered != seen.key()) {
                        return conflict();
                    }
                    if (seen.serviceActionKey() == 0) {
                        unregister(nexus);
                    } else {
                        registrations.put(nexus, seen.serviceActionKey());
                    }
                }
            }
            case 0x01 -> { // RESERVE
                if (registered == null || registered != seen.key()) {
                    return conflict();
                }
                if (seen.type() == 5 && !type5Supported) {
                    return illegal(0x24);
                }
                if (holder != null) {
                    return holder.equals(nexus) && holderType == seen.type() ? good(new byte[0]) : conflict();
                }
                holder = nexus;
                holderType = seen.type();
            }
            case 0x02 -> { // RELEASE
                if (registered == null || registered != seen.key()) {
                    return conflict();
                }
                if (nexus.equals(holder)) {
                    holder = null;
                    holderType = 0;
                }
            }
            case 0x04, 0x05 -> { // PREEMPT, PREEMPT AND ABORT
                if (seen.serviceAction() == 0x05 && !preemptAndAbortSupported) {
                    return illegal(0x24);
                }
                if (registered == null || registered != seen.key()
                        || !registrations.containsValue(seen.serviceActionKey())) {
                    return conflict();
                }
                boolean takesReservation = holder != null && registrations.get(holder) == seen.serviceActionKey();
                for (String other : List.copyOf(registrations.keySet())) {
                    if (!other.equals(nexus) && registrations.get(other) == seen.serviceActionKey()) {
                        registrations.remove(other);
                        if (seen.serviceAction() == 0x05) {
                            aborted.add(other);
                        }
                    }
                }
                if (takesReservation) {
                    holder = nexus;
                    holderType = seen.type();
                }
            }
            default -> {
                return illegal(0x24);
            }
        }
        generation++;
        return good(new byte[0]);
    }

    /** SPC-4: a registrants-only reservation is released when its holder unregisters. */
    private void unregister(String nexus) {
        registrations.remove(nexus);
        if (nexus.equals(holder)) {
            holder = null;
            holderType = 0;
        }
    }

    private static Reply good(byte[] data) {
        return new Reply(GOOD, 0, 0, data, new byte[0]);
    }

    private static Reply conflict() {
        return new Reply(RESERVATION_CONFLICT, 0, 0, new byte[0], new byte[0]);
    }

    /** CHECK CONDITION, ILLEGAL REQUEST, with the ASC given, in fixed format. */
    private static Reply illegal(int asc) {
        byte[] sense = new byte[18];
        sense[0] = 0x70;
        sense[2] = 0x05;
        sense[7] = 10;
        sense[12] = (byte) asc;
        return new Reply(CHECK_CONDITION, 0, 0x08, new byte[0], sense);
    }
}
