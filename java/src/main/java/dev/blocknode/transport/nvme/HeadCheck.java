package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NamespaceCheck;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.transport.Attachment;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Whether a head device opened for a reservation command is still the namespace its volume was attached as: the
 * opened device is the attachment's device number, sysfs still names it as the attachment did, and its wwid is the
 * one the attach verified. A head deleted with its last controller and a name or number reused by another namespace
 * since must never get a command meant for this volume. Fencing says which attachment a head stands for before it
 * sends anything through it.
 */
final class HeadCheck implements NamespaceCheck {

    private final NvmeControllers controllers;
    private final Map<Path, Attachment> expected = new ConcurrentHashMap<>();

    HeadCheck(NvmeControllers controllers) {
        this.controllers = controllers;
    }

    /** Commands through {@code attachment.device()} are for this attachment from now on. */
    void expect(Attachment attachment) {
        expected.put(attachment.device(), attachment);
    }

    void forget(Attachment attachment) {
        expected.remove(attachment.device(), attachment);
    }

    @Override
    public void require(Path device, DeviceNumber opened) throws IOException {
        Attachment attachment = expected.get(device);
        if (attachment == null || !attachment.number().equals(opened)) {
            throw new IOException(device + " (" + opened.major() + ":" + opened.minor() + ") is not the namespace"
                    + " disk the volume was attached as; no command sent through it");
        }
        Optional<String> disk = controllers.diskOf(opened);
        if (disk.isEmpty() || !disk.get().equals(device.getFileName().toString())) {
            throw new IOException(device + " is gone or another disk now (sysfs names " + opened.major() + ":"
                    + opened.minor() + " " + disk.orElse("nothing") + "); no command sent through it");
        }
        Optional<String> wwid = controllers.wwid(disk.get());
        if (wwid.isPresent() && !wwid.get().equals(attachment.identity())) {
            throw new IOException(device + " leads to namespace " + wwid.get() + " now, not "
                    + attachment.identity() + "; no command sent through it");
        }
    }
}
