package dev.blocknode.transport;

import dev.blocknode.os.DeviceNumber;

import java.nio.file.Path;
import java.util.Map;

/**
 * A device attached for a volume: the node to use, its kernel device number, the identity that was
 * verified (empty when the transport has none), and whatever the transport needs to detach it later.
 */
public record Attachment(String transport, Path device, DeviceNumber number, String identity,
                         Map<String, String> details) {

    public Attachment {
        details = Map.copyOf(details);
    }
}
