package dev.blocknode.nvme.reservation;

import dev.blocknode.os.DeviceNumber;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Whether a namespace's block device opened for commands is still the namespace it was listed for, asked by the
 * opened device's number: a reservation command meant for one volume must never reach a namespace that took the
 * name since.
 */
@FunctionalInterface
public interface NamespaceCheck {

    /** @throws IOException when it is not (another namespace has the name now, it is gone) */
    void require(Path device, DeviceNumber opened) throws IOException;
}
