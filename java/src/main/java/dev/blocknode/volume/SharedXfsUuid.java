package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.XfsSuperblock;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.logging.Logger;

/**
 * xfs {@code nouuid} for a block-level copy (a clone, a snapshot) of an xfs filesystem this node already has
 * mounted: the kernel refuses a second mount of one UUID, so the stage mounts the copy with nouuid, and only then
 * (nouuid also turns off the check that catches the same filesystem mounted twice by mistake).
 *
 * <p>Decided at each mount from what the node has mounted at that moment, never recorded: the option matters
 * only to the mount(2) that makes the staging mount, which outlives a plugin restart as it is (a restarted plugin
 * finds it in place and mounts nothing). Once the original is unmounted, a copy staged again needs no nouuid, and
 * the original staged after it gets it instead. The record keeps the request's mount flags, so a re-stage compares
 * with what the caller asked, not with this.
 */
final class SharedXfsUuid {

    private static final Logger LOG = Logger.getLogger(SharedXfsUuid.class.getName());
    static final String NOUUID = "nouuid";

    private final Host host;

    SharedXfsUuid(Host host) {
        this.host = host;
    }

    /**
     * {@code options} with nouuid added when {@code device} holds an xfs whose UUID an xfs mounted on this node
     * has; {@code options} unchanged otherwise, for ext4, for a filesystem made in this stage (mkfs.xfs gives each
     * a new UUID) and when the caller's mount flags hold nouuid already.
     */
    MountOptions forMount(String volumeId, Path device, FilesystemType type, boolean formattedHere,
                          MountOptions options) throws VolumeException {
        if (type != FilesystemType.XFS || formattedHere || options.data().contains(NOUUID)) {
            return options;
        }
        Optional<UUID> uuid;
        try {
            uuid = XfsSuperblock.uuidOf(device);
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the xfs superblock of device " + device + " of volume "
                    + volumeId, e);
        }
        if (uuid.isEmpty()) {
            return options;
        }
        Optional<Path> sharing = mountedWith(uuid.get());
        if (sharing.isEmpty()) {
            return options;
        }
        LOG.info(() -> "device " + device + " of volume " + volumeId + " holds an xfs whose UUID " + uuid.get()
                + " the xfs mounted at " + sharing.get() + " has too (a block-level copy): mounting it with nouuid");
        List<String> data = new ArrayList<>(options.data());
        data.add(NOUUID);
        return new MountOptions(options.flags(), data);
    }

    /** A mount point of an xfs on this node with {@code uuid}, if any. */
    private Optional<Path> mountedWith(UUID uuid) throws VolumeException {
        List<MountEntry> xfsMounts;
        try {
            xfsMounts = host.mounter().mountsWhere(e -> e.fsType().equals("xfs"));
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the mount table", e);
        }
        Set<DeviceNumber> checked = new LinkedHashSet<>();
        for (MountEntry entry : xfsMounts) {
            if (!checked.add(entry.device())) {
                continue;
            }
            try {
                Optional<Path> node = host.blockDevices().nodeFor(entry.device());
                if (node.isPresent() && XfsSuperblock.uuidOf(node.get()).filter(uuid::equals).isPresent()) {
                    return Optional.of(entry.mountPoint());
                }
            } catch (IOException unreadable) {
                // Another filesystem's device we cannot read (gone meanwhile): it decides nothing here; should it
                // share the UUID, the kernel refuses the mount and the stage says so.
                LOG.fine(() -> "cannot read the xfs superblock of device " + entry.device() + " mounted at "
                        + entry.mountPoint() + ": " + unreadable.getMessage());
            }
        }
        return Optional.empty();
    }
}
