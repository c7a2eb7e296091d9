package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.ContextList;
import dev.blocknode.transport.KeyFormats;
import dev.blocknode.transport.KeyProblems;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The NVMe/TCP namespace a request names, checked key by key. A failure names the key and what is wrong with
 * it, never the value: every value here was typed by someone else, and goes into the fabrics options string,
 * where a comma would smuggle in another option.
 *
 * <p>volume_context (or publish_context) keys: {@code subsysNQN} (required), {@code nvmePortals} (required:
 * one or more {@code address[:port]}, comma-separated or a JSON-style list, IPv6 in brackets), at least one of
 * {@code namespaceNGUID}, {@code namespaceEUI64}, {@code namespaceUUID} (the namespace must report each one
 * given), optional {@code namespaceID} (the NSID), optional {@code hostNQN} / {@code hostID} (instead of
 * /etc/nvme/hostnqn and /etc/nvme/hostid).
 */
record NvmeVolumeSpec(String subsystemNqn, List<NvmePortal> portals, NamespaceIdentity namespace,
                      Optional<String> hostNqn, Optional<String> hostId) {

    static final String SUBSYSTEM_NQN = "subsysNQN";
    static final String PORTALS = "nvmePortals";
    static final String NGUID = "namespaceNGUID";
    static final String EUI64 = "namespaceEUI64";
    static final String UUID = "namespaceUUID";
    static final String NSID = "namespaceID";
    static final String HOST_NQN = "hostNQN";
    static final String HOST_ID = "hostID";

    private static final Pattern HOST_UUID = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    NvmeVolumeSpec {
        portals = List.copyOf(portals);
    }

    /**
     * @throws VolumeException INVALID_ARGUMENT naming every malformed or missing key
     */
    static NvmeVolumeSpec from(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> read(request, problems));
    }

    /** The spec, or empty after recording in {@code problems} every key that is missing or malformed. */
    static Optional<NvmeVolumeSpec> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        int before = problems.size();
        Optional<String> nqn = problems.check(() -> nqn(SUBSYSTEM_NQN, required(request, SUBSYSTEM_NQN)));
        Set<NvmePortal> portals = new LinkedHashSet<>();
        problems.check(() -> portals(required(request, PORTALS))).ifPresent(portals::addAll);
        Optional<String> nguid = problems.check(() -> identifier(request, NGUID, NamespaceIdentity::nguidOf,
                "16 bytes of hex").orElse(null));
        Optional<String> eui64 = problems.check(() -> identifier(request, EUI64, NamespaceIdentity::eui64Of,
                "8 bytes of hex").orElse(null));
        Optional<String> uuid = problems.check(() -> identifier(request, UUID, NamespaceIdentity::uuidOf,
                "a UUID").orElse(null));
        if (request.key(NGUID).isEmpty() && request.key(EUI64).isEmpty() && request.key(UUID).isEmpty()) {
            problems.add("volume_context gives no namespace identity: the nvme-tcp transport needs " + NGUID + ", "
                    + EUI64 + " or " + UUID + ", as the array reports it");
        }
        Optional<Long> nsid = problems.check(() -> nsid(request));
        Optional<String> hostNqn = request.key(HOST_NQN);
        if (hostNqn.isPresent()) {
            problems.check(() -> nqn(HOST_NQN, hostNqn.get()));
        }
        Optional<String> hostId = request.key(HOST_ID);
        if (hostId.isPresent() && !HOST_UUID.matcher(hostId.get()).matches()) {
            problems.add("volume_context." + HOST_ID + " is not a UUID");
        }
        if (problems.size() > before) {
            return Optional.empty();
        }
        return Optional.of(new NvmeVolumeSpec(nqn.orElseThrow(), new ArrayList<>(portals),
                new NamespaceIdentity(nguid, eui64, uuid, nsid.map(OptionalLong::of).orElse(OptionalLong.empty())),
                hostNqn, hostId.map(String::toLowerCase)));
    }

    private static List<NvmePortal> portals(String value) throws VolumeException {
        List<NvmePortal> portals = new ArrayList<>();
        for (String item : ContextList.items(value)) {
            try {
                if (!KeyFormats.NVME_PORTAL.accepts(item)) {
                    throw new IllegalArgumentException(KeyFormats.NVME_PORTAL.description());
                }
                portals.add(NvmePortal.parse(item));
            } catch (IllegalArgumentException e) {
                throw VolumeException.invalid("volume_context." + PORTALS + " has a portal that is not"
                        + " address[:port] (" + e.getMessage() + ")");
            }
        }
        if (portals.isEmpty()) {
            throw VolumeException.invalid("volume_context." + PORTALS + " names no portal");
        }
        return portals;
    }

    private static Long nsid(AttachRequest request) throws VolumeException {
        Optional<String> nsidText = request.key(NSID);
        if (nsidText.isEmpty()) {
            return null;
        }
        try {
            long value = Long.parseLong(nsidText.get());
            if (value < 1 || value > 0xFFFF_FFFEL) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw VolumeException.invalid("volume_context." + NSID + " is not a namespace ID (1..4294967294)");
        }
    }

    /**
     * Who connects: the request's host NQN and ID where given, else the node's. FAILED_PRECONDITION when the
     * node has no host NQN at all (nothing to present to the array), or a malformed one.
     */
    HostIdentity host(HostIdentity.Configured node) throws VolumeException {
        Optional<String> nqn = hostNqn.or(node::hostNqn);
        if (nqn.isEmpty()) {
            throw VolumeException.precondition("this node has no NVMe host NQN: " + HostIdentity.DEFAULT_DIRECTORY
                    + "/hostnqn is missing or empty and volume_context." + HOST_NQN + " is not given");
        }
        if (!validNqn(nqn.get())) {
            throw VolumeException.precondition("the node's NVMe host NQN (" + HostIdentity.DEFAULT_DIRECTORY
                    + "/hostnqn) is not an NQN the fabrics options can carry");
        }
        Optional<String> id = hostId.or(node::hostId);
        if (id.isPresent() && !HOST_UUID.matcher(id.get()).matches()) {
            throw VolumeException.precondition("the node's NVMe host ID (" + HostIdentity.DEFAULT_DIRECTORY
                    + "/hostid) is not a UUID");
        }
        return new HostIdentity(nqn.get(), id.map(String::toLowerCase));
    }

    private static String nqn(String key, String value) throws VolumeException {
        if (!validNqn(value)) {
            throw VolumeException.invalid("volume_context." + key + " is not an NVMe qualified name"
                    + " (" + KeyFormats.NQN.description() + ")");
        }
        return value;
    }

    static boolean validNqn(String value) {
        return KeyFormats.NQN.accepts(value);
    }

    private static Optional<String> identifier(AttachRequest request, String key,
                                               Function<String, Optional<String>> parser, String shape)
            throws VolumeException {
        Optional<String> text = request.key(key);
        if (text.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(parser.apply(text.get()).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + key + " is not " + shape + " (or all zeroes, which means not reported)")));
    }

    private static String required(AttachRequest request, String key) throws VolumeException {
        return request.key(key).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + key + " is required by the nvme-tcp transport"));
    }
}
