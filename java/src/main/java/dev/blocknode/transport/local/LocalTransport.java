package dev.blocknode.transport.local;

import dev.blocknode.logging.Printable;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.DeviceIdentity;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.WwidKeys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A device that is already on the node, named by path (a /dev node or a /dev/disk/by-id link). Used for
 * development, the demo and the tests (loop devices), and for disks a node sees directly. Nothing is
 * attached or detached; the identity check still applies when a "wwid" is given.
 *
 * <p>volume_context keys: {@code devicePath} (required), {@code wwid} (optional: must equal the device's
 * sysfs wwid).
 */
public final class LocalTransport implements Transport {

    public static final String NAME = "local";
    public static final String DEVICE_PATH = "devicePath";
    public static final String WWID = "wwid";

    private final Host host;

    public LocalTransport(Host host) {
        this.host = host;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> identifyingKeys() {
        return Set.of(DEVICE_PATH);
    }

    @Override
    public AttachPlan validate(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> read(request, problems));
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        read(request, problems);
    }

    /** The plan, or empty after recording in {@code problems} every key that is missing or malformed. */
    private Optional<LocalAttachPlan> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        int before = problems.size();
        Optional<Path> named = problems.check(() -> devicePath(request));
        Optional<String> wwid = request.key(WWID);
        if (wwid.isPresent()) {
            problems.check(() -> {
                WwidKeys.device(WWID, wwid.get());
                return null;
            });
        }
        return problems.size() == before ? named.map(path -> new LocalAttachPlan(request, path)) : Optional.empty();
    }

    private Path devicePath(AttachRequest request) throws VolumeException {
        String path = request.key(DEVICE_PATH).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + DEVICE_PATH + " is required by the local transport"));
        Path device;
        try {
            device = Path.of(path);
        } catch (InvalidPathException e) {
            // A NUL: the csi layer refuses it before this, but a path the JDK cannot hold is bad input wherever
            // it comes from, never an INTERNAL error with a stack trace.
            throw VolumeException.invalid("volume_context." + DEVICE_PATH + " is not a valid path");
        }
        if (!device.isAbsolute() || !device.normalize().startsWith(host.paths().dev())) {
            throw VolumeException.invalid("volume_context." + DEVICE_PATH + " must be an absolute path under "
                    + host.paths().dev() + ", got \"" + Printable.bounded(path, 256) + "\"");
        }
        return device;
    }

    @Override
    public Attachment attach(AttachPlan plan) throws VolumeException {
        LocalAttachPlan own = AttachPlan.own(LocalAttachPlan.class, plan, this);
        AttachRequest request = own.request();
        Path named = own.named();
        Path device;
        FileStat stat;
        try {
            device = named.toRealPath();
            stat = host.mounter().stat(device);
        } catch (NoSuchFileException e) {
            throw VolumeException.notFound("device " + named + " of volume " + request.volumeId() + " does not exist");
        } catch (IOException e) {
            throw VolumeException.internal("cannot resolve device " + named, e);
        }
        if (!device.startsWith(host.paths().dev())) {
            throw VolumeException.invalid("volume_context." + DEVICE_PATH + " " + named + " resolves to " + device
                    + ", outside " + host.paths().dev());
        }
        if (!stat.isBlockDevice()) {
            throw VolumeException.invalid("volume_context." + DEVICE_PATH + " " + named + " is not a block device");
        }
        String identity = "";
        Optional<String> expected = request.key(WWID);
        if (expected.isPresent()) {
            Optional<String> actual = wwidOf(stat);
            if (actual.isEmpty()) {
                throw VolumeException.precondition("device " + device + " reports no wwid, so it cannot be verified as "
                        + expected.get());
            }
            if (!DeviceIdentity.same(actual.get(), expected.get())) {
                throw VolumeException.precondition("device " + device + " has wwid " + actual.get()
                        + ", not the expected " + expected.get() + "; refusing to use it");
            }
            identity = actual.get();
        }
        return new Attachment(NAME, device, stat.rdev(), identity, Map.of(DEVICE_PATH, named.toString()));
    }

    @Override
    public void detach(Attachment attachment) {
        // The device was on the node before us and stays after us.
    }

    /** A device no transport recognizes was on the node before us: unmounted and flushed, never detached. */
    @Override
    public boolean holdsUnrecognizedDevices() {
        return true;
    }

    @Override
    public void abandon(AttachRequest request) {
        // attach only looks the device up: an interrupted one changed nothing.
    }

    /**
     * The device's WWID: a SCSI disk's device/wwid, a device's own wwid attribute (NVMe), or for a
     * multipath map the WWID in its dm uuid ("mpath-3600...").
     */
    private Optional<String> wwidOf(FileStat stat) throws VolumeException {
        Path sysDevice = host.paths().sysBlockDevice(stat.rdev());
        for (Path candidate : new Path[]{sysDevice.resolve("device/wwid"), sysDevice.resolve("wwid"),
                sysDevice.resolve("dm/uuid")}) {
            try {
                String value = Files.readString(candidate, StandardCharsets.US_ASCII).strip();
                if (candidate.endsWith("dm/uuid")) {
                    if (!value.startsWith(MULTIPATH_UUID_PREFIX)) {
                        continue; // an LVM volume or other map: no LUN identity
                    }
                    value = value.substring(MULTIPATH_UUID_PREFIX.length());
                }
                return Optional.of(value);
            } catch (NoSuchFileException absent) {
                // try the next place
            } catch (IOException e) {
                throw VolumeException.internal("cannot read " + candidate, e);
            }
        }
        return Optional.empty();
    }

    private static final String MULTIPATH_UUID_PREFIX = "mpath-";
}
