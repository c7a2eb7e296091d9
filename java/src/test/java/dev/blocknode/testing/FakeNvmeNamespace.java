package dev.blocknode.testing;

import dev.blocknode.nvme.reservation.NamespaceCheck;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.NvmePassThrough;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One NVMe namespace of a subsystem as the NVMe Base Specification's reservations model it, in memory, behind
 * the block devices of the hosts that reach it: each device belongs to a host (its Host Identifier), and a
 * registration is the host's, shared by all its controllers. It decodes the commands itself (not with the code
 * under test), by the rules Linux's nvmet follows (drivers/nvme/target/pr.c): Register succeeds again with the
 * same key and conflicts with another; Replace and Unregister need the current key or IEKEY and a registration;
 * Acquire refuses IEKEY; Preempt of the holder's key moves the reservation; the generation rises with every
 * registration change and preemption; the report is the extended structure only. A write is refused to an
 * unregistered host under a registrants-only type. Every command is logged.
 *
 * <p>Faults: reservations not supported at all (Invalid Command Opcode), a controller that knows only 64-bit host
 * identifiers (the plain report), a device whose name now leads to another namespace, a dead path, a target restart
 * that forgets every registration and the reservation (nvmet keeps them in memory).
 */
public final class FakeNvmeNamespace implements NvmePassThrough {

    public static final int SUCCESS = 0x0;
    public static final int INVALID_OPCODE = 0x4001;
    public static final int INVALID_FIELD = 0x4002;
    public static final int HOST_ID_INCONSISTENT = 0x4018;
    public static final int RESERVATION_CONFLICT = 0x4083;

    /** A command as the namespace saw it: which host, which opcode, cdw10 and the two keys of its data. */
    public record Seen(String host, int opcode, int cdw10, long firstKey, long secondKey) {
    }

    /** What another host does between two of one host's commands ({@link #afterNext}). */
    @FunctionalInterface
    public interface Interleaved {
        void run() throws IOException;
    }

    private record Hook(String host, int opcode, Interleaved action) {
    }

    private final int namespaceId;
    private final Map<Path, String> hostOf = new HashMap<>();
    private final Map<Path, DeviceNumber> numberOf = new HashMap<>();
    private final Set<Path> leadingElsewhere = new HashSet<>();
    private final Set<String> dead = new HashSet<>();
    private final Map<String, Long> registrations = new LinkedHashMap<>();
    private final List<Seen> log = new ArrayList<>();
    private final List<Hook> hooks = new ArrayList<>();
    private String holder;
    private int holderType;
    private long generation;
    private boolean reservationsSupported = true;
    private boolean extendedReport = true;
    private int openChannels;

    public FakeNvmeNamespace(int namespaceId) {
        this.namespaceId = namespaceId;
    }

    /** {@code device} is this namespace as {@code host} (a Host Identifier, say "nodeA") reaches it. */
    public synchronized FakeNvmeNamespace device(Path device, String host) {
        hostOf.put(device, host);
        numberOf.put(device, new DeviceNumber(259, numberOf.size()));
        return this;
    }

    /** {@code device} of {@code host}, with the device number sysfs shows for it (a transport test's head). */
    public synchronized FakeNvmeNamespace device(Path device, String host, DeviceNumber number) {
        hostOf.put(device, host);
        numberOf.put(device, number);
        return this;
    }

    /** The target restarted: every registration and the reservation gone, the generation back at 0. */
    public synchronized void restart() {
        registrations.clear();
        holder = null;
        holderType = 0;
        generation = 0;
    }

    public synchronized void withoutReservations() {
        reservationsSupported = false;
    }

    /** The controllers know 64-bit host identifiers only: the extended report is refused, the plain one given. */
    public synchronized void withPlainReportOnly() {
        extendedReport = false;
    }

    public synchronized void leadsElsewhere(Path device) {
        leadingElsewhere.add(device);
    }

    /** Commands from {@code host} fail before they reach the namespace (its paths are down). */
    public synchronized void dead(String host) {
        dead.add(host);
    }

    /** What sysfs would say of an opened device: this namespace while the name is its, else refused. */
    public NamespaceCheck check() {
        return (device, opened) -> {
            synchronized (this) {
                if (!opened.equals(numberOf.get(device)) || leadingElsewhere.contains(device)) {
                    throw new IOException(device + " leads to another namespace now");
                }
            }
        };
    }

    /** Registers {@code host} with {@code key} directly (another node's registration, set up by a test). */
    /**
     * Runs {@code action} once, right after {@code host}'s next command with {@code opcode} (0x11 Acquire, 0x15
     * Release, ...) has been answered: another node's commands landing between two of this host's, as a race at a
     * real target would order them.
     */
    public synchronized void afterNext(String host, int opcode, Interleaved action) {
        hooks.add(new Hook(host, opcode, action));
    }

    public synchronized void registered(String host, long key) {
        registrations.put(host, key);
        generation++;
    }

    public synchronized Map<String, Long> registrations() {
        return Map.copyOf(registrations);
    }

    public synchronized String holder() {
        return holder;
    }

    public synchronized int holderType() {
        return holderType;
    }

    public synchronized long generation() {
        return generation;
    }

    public synchronized List<Seen> log() {
        return List.copyOf(log);
    }

    public synchronized int openChannels() {
        return openChannels;
    }

    /** Whether a write from {@code host} would be let through, by the reservation's type (3 and 5: registrants). */
    public synchronized boolean writeAllowed(String host) {
        if (holder == null || holder.equals(host)) {
            return true;
        }
        return switch (holderType) {
            case 1, 2 -> false;
            default -> registrations.containsKey(host);
        };
    }

    @Override
    public synchronized Channel open(Path device) throws IOException {
        String host = hostOf.get(device);
        if (host == null) {
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
            public int namespaceId() {
                return namespaceId;
            }

            @Override
            public Reply send(Command command) throws IOException {
                if (closed) {
                    throw new IOException("closed");
                }
                return execute(host, command);
            }

            @Override
            public void close() {
                synchronized (FakeNvmeNamespace.this) {
                    if (!closed) {
                        closed = true;
                        openChannels--;
                    }
                }
            }
        };
    }

    private synchronized Reply execute(String host, Command command) throws IOException {
        if (dead.contains(host)) {
            throw new IOException("NVMe passthrough failed: no usable path (" + host + ")");
        }
        int[] dwords = command.dwords();
        ByteBuffer data = ByteBuffer.wrap(command.data()).order(ByteOrder.LITTLE_ENDIAN);
        long first = command.data().length >= 8 ? data.getLong(0) : 0;
        long second = command.data().length >= 16 ? data.getLong(8) : 0;
        log.add(new Seen(host, command.opcode(), dwords[0], first, second));
        if (!reservationsSupported) {
            return new Reply(INVALID_OPCODE, 0, new byte[0]);
        }
        int action = dwords[0] & 0x7;
        boolean ignoreKey = (dwords[0] & 0x8) != 0;
        int type = (dwords[0] >> 8) & 0xff;
        Reply reply = switch (command.opcode()) {
            case 0x0d -> status(register(host, action, ignoreKey, first, second));
            case 0x11 -> status(ignoreKey || type < 1 || type > 6 ? INVALID_FIELD : acquire(host, action, type, first, second));
            case 0x15 -> status(ignoreKey ? INVALID_FIELD : release(host, action, type, first));
            case 0x0e -> report(dwords[0], dwords[1]);
            default -> status(INVALID_OPCODE);
        };
        runHooks(host, command.opcode());
        return reply;
    }

    private void runHooks(String host, int opcode) throws IOException {
        for (Hook hook : List.copyOf(hooks)) {
            if (hook.host().equals(host) && hook.opcode() == opcode) {
                hooks.remove(hook);
                hook.action().run();
            }
        }
    }

    private static Reply status(int status) {
        return new Reply(status, 0, new byte[0]);
    }

    private int register(String host, int action, boolean ignoreKey, long current, long next) {
        Long registered = registrations.get(host);
        int status;
        switch (action) {
            case 0 -> status = registered == null || registered == next ? SUCCESS : RESERVATION_CONFLICT;
            case 1, 2 -> status = registered != null && (ignoreKey || registered == current)
                    ? SUCCESS : RESERVATION_CONFLICT;
            default -> status = INVALID_FIELD;
        }
        if (status == SUCCESS) {
            if (action == 1) {
                unregister(host);
            } else {
                registrations.put(host, next);
            }
            generation++;
        }
        return status;
    }

    private void unregister(String host) {
        registrations.remove(host);
        if (host.equals(holder) && holderType != 5 && holderType != 6) {
            holder = null;
            holderType = 0;
        }
    }

    private int acquire(String host, int action, int type, long current, long preempted) {
        Long registered = registrations.get(host);
        if (registered == null || registered != current) {
            return RESERVATION_CONFLICT;
        }
        if (action == 0) {
            if (holder != null) {
                return holder.equals(host) && holderType == type ? SUCCESS : RESERVATION_CONFLICT;
            }
            holder = host;
            holderType = type;
            return SUCCESS;
        }
        if (action != 1 && action != 2) {
            return INVALID_FIELD;
        }
        if (holder == null) {
            return unregisterAll(host, preempted, true);
        }
        if (holder.equals(host)) {
            holderType = type;
            generation++;
            return SUCCESS;
        }
        if (registrations.get(holder) == preempted) {
            holder = host;
            holderType = type;
            unregisterAll(host, preempted, false);
            return SUCCESS;
        }
        return preempted == 0 ? INVALID_FIELD : unregisterAll(host, preempted, true);
    }

    /** Every host registered with {@code key} loses its registration (this one too, when {@code self}), as nvmet. */
    private int unregisterAll(String host, long key, boolean self) {
        List<String> hosts = registrations.entrySet().stream()
                .filter(e -> e.getValue() == key && (self || !e.getKey().equals(host))).map(Map.Entry::getKey).toList();
        if (hosts.isEmpty() && self) {
            return RESERVATION_CONFLICT;
        }
        hosts.forEach(this::unregister);
        generation++;
        return SUCCESS;
    }

    private int release(String host, int action, int type, long current) {
        Long registered = registrations.get(host);
        if (registered == null || registered != current) {
            return RESERVATION_CONFLICT;
        }
        if (action == 1) {
            registrations.clear();
            holder = null;
            holderType = 0;
            generation++;
            return SUCCESS;
        }
        if (!host.equals(holder)) {
            return SUCCESS;
        }
        if (holderType != type) {
            return RESERVATION_CONFLICT;
        }
        holder = null;
        holderType = 0;
        return SUCCESS;
    }

    private Reply report(int cdw10, int cdw11) {
        boolean extended = (cdw11 & 1) != 0;
        if (extended != extendedReport) {
            return status(extended ? HOST_ID_INCONSISTENT : INVALID_FIELD);
        }
        int length = 4 * (cdw10 + 1);
        int size = extended ? 64 : 24;
        if (length < size) {
            return status(INVALID_FIELD);
        }
        ByteBuffer out = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(0, (int) generation);
        out.put(4, (byte) holderType);
        out.putShort(5, (short) registrations.size());
        int at = size;
        for (Map.Entry<String, Long> registration : registrations.entrySet()) {
            if (at + size > length) {
                break;
            }
            out.putShort(at, (short) 0xffff);
            boolean holds = registration.getKey().equals(holder) || holderType == 5 || holderType == 6;
            out.put(at + 2, (byte) (holds ? 1 : 0));
            byte[] hostId = hostId(registration.getKey(), extended ? 16 : 8);
            out.putLong(at + (extended ? 8 : 16), registration.getValue());
            out.put(at + (extended ? 16 : 8), hostId);
            at += size;
        }
        return new Reply(SUCCESS, 0, out.array());
    }

    /** The host's name as its identifier's bytes, padded with zeros. */
    private static byte[] hostId(String host, int length) {
        byte[] id = new byte[length];
        byte[] name = host.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        System.arraycopy(name, 0, id, 0, Math.min(length, name.length));
        return id;
    }
}
