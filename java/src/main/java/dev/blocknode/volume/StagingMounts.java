package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a stage asks of the staging path and of its device before it changes either: what is mounted at the path
 * (read by descriptor, following no symlink), and whether anything else on the node holds the device.
 */
final class StagingMounts {

    private final Host host;
    private final KubeletPaths paths;

    StagingMounts(Host host, KubeletPaths paths) {
        this.host = host;
        this.paths = paths;
    }

    /** The staging directory, created (or there already) beneath the kubelet root, through no symlink. */
    void createDirectory(Path staging) throws VolumeException {
        try (OpenedPath ignored = paths.openDirectoryCreating("staging_target_path", staging)) {
            // created (or there already) beneath the kubelet root, through no symlink
        } catch (IOException e) {
            throw VolumeException.internal("cannot close staging directory " + staging, e);
        }
    }

    boolean holdsMountOf(Path staging, DeviceNumber number) throws VolumeException {
        return mountedAt(staging).map(stat -> stat.device().equals(number)).orElse(false);
    }

    /**
     * True when the volume's device is already mounted at the staging path (an earlier attempt got that far);
     * ALREADY_EXISTS when something else is mounted there. Checked before anything is recorded.
     */
    boolean alreadyMountedAt(String volumeId, Path staging, Attachment attachment) throws VolumeException {
        Optional<FileStat> mounted = mountedAt(staging);
        if (mounted.isEmpty()) {
            return false;
        }
        if (!mounted.get().device().equals(attachment.number())) {
            throw VolumeException.alreadyExists("staging path " + staging + " already holds a mount of device "
                    + mounted.get().device() + ", not of volume " + volumeId + "'s device " + attachment.device()
                    + " (" + attachment.number() + ")");
        }
        return true;
    }

    /**
     * The kernel says the device is held, and neither this mount namespace's table nor sysfs's holders say by what:
     * a mount in another mount namespace (another container's, a node's left from before it lost its kubelet), or a
     * process that opened the device exclusively. Said, so that an operator does not look for a mount that the
     * node's own {@code findmnt} shows nowhere.
     */
    static final String UNSEEN_USER = "not by a mount this mount namespace shows nor by a device-mapper, md or"
            + " swap holder: a mount in another mount namespace (another container's), or a process that opened it"
            + " exclusively; `fuser -vm DEVICE` or `grep DEVICE /proc/*/mountinfo` on the node finds it";

    /**
     * A device that something else on the node already holds (a filesystem mounted by hand or by another
     * volume, a multipath map over a path device, md, swap) is never formatted, mounted or handed out.
     */
    void requireUnclaimed(String volumeId, Attachment attachment) throws VolumeException {
        try {
            if (!host.blockDevices().isClaimed(attachment.device())) {
                return;
            }
            List<String> users = new ArrayList<>();
            for (MountEntry entry : host.mounter().mountsWhere(e -> e.device().equals(attachment.number()))) {
                users.add("mounted at " + entry.mountPoint());
            }
            for (String holder : host.blockDevices().holders(attachment.number())) {
                users.add("held by " + holder);
            }
            throw VolumeException.precondition("device " + attachment.device() + " of volume " + volumeId
                    + " is in use on this node (" + (users.isEmpty() ? UNSEEN_USER : String.join(", ", users))
                    + "); refusing to stage it");
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell whether device " + attachment.device() + " is in use", e);
        }
    }

    /** The staging path's statx when something is mounted there, by descriptor; empty when nothing is. */
    private Optional<FileStat> mountedAt(Path staging) throws VolumeException {
        Optional<OpenedPath> opened = paths.openIfPresent("staging_target_path", staging);
        if (opened.isEmpty()) {
            return Optional.empty();
        }
        try (OpenedPath directory = opened.get()) {
            FileStat stat = directory.stat();
            return Publications.isMountPoint(host, staging, stat) ? Optional.of(stat) : Optional.empty();
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect staging path " + staging, e);
        }
    }
}
