package dev.blocknode.transport;


import dev.blocknode.outcome.VolumeException;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Chooses the transport for a request: by the volume_context key "transport" when given, otherwise by
 * which transport's identifying keys are present. Exactly one must match.
 */
public final class Transports {

    public static final String TRANSPORT_KEY = "transport";

    private final Map<String, Transport> byName = new LinkedHashMap<>();

    public Transports(List<Transport> transports) {
        for (Transport transport : transports) {
            byName.put(transport.name(), transport);
        }
    }

    public Optional<Transport> named(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    /** Every transport, in the order given. */
    public List<Transport> all() {
        return List.copyOf(byName.values());
    }

    /** Where a device no transport recognizes is recorded (see {@link Transport#holdsUnrecognizedDevices}). */
    public Optional<Transport> fallback() {
        return byName.values().stream().filter(Transport::holdsUnrecognizedDevices).findFirst();
    }

    public Transport select(AttachRequest request) throws VolumeException {
        Optional<String> explicit = request.key(TRANSPORT_KEY);
        if (explicit.isPresent()) {
            return named(explicit.get()).orElseThrow(() -> VolumeException.invalid(
                    "volume_context." + TRANSPORT_KEY + " \"" + explicit.get() + "\" is not a known transport; known: "
                            + byName.keySet()));
        }
        List<Transport> matching = byName.values().stream()
                .filter(t -> t.identifyingKeys().stream().anyMatch(k -> request.key(k).isPresent()))
                .toList();
        if (matching.size() == 1) {
            return matching.get(0);
        }
        if (matching.isEmpty()) {
            throw VolumeException.invalid("volume_context names no device: give \"" + TRANSPORT_KEY + "\" or one of "
                    + byName.values().stream().map(t -> t.name() + " " + t.identifyingKeys())
                    .collect(Collectors.joining(", ")));
        }
        throw VolumeException.invalid("volume_context matches several transports "
                + matching.stream().map(Transport::name).toList() + "; set \"" + TRANSPORT_KEY + "\"");
    }
}
