package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;

import java.util.Locale;

/**
 * volume_context {@value #KEY}: whether a volume is fenced at the storage. {@code auto} (the default) fences when
 * the LUN supports what fencing needs and stages unfenced otherwise, with a warning and a metric; {@code required}
 * refuses a volume that cannot be fenced; {@code off} never fences.
 */
enum FencingMode {
    AUTO, REQUIRED, OFF;

    static final String KEY = "fencing";

    static FencingMode of(AttachRequest request) throws VolumeException {
        String value = request.key(KEY).orElse("auto");
        try {
            return valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid("volume_context." + KEY + " must be auto, required or off, got \"" + value
                    + "\"");
        }
    }
}
