package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.block.DeviceMapperId;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.CryptRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.CryptMappingName;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Rebuilds the staging record of a volume whose record is gone (a lost or wiped state dir), from the mount
 * at its staging path and sysfs: mount source -> device number -> multipath map or SCSI disk -> path
 * disks -> their SCSI hosts -> iSCSI sessions or FC HBA ports, each transport recognizing its own
 * ({@link Transport#attachmentOf}). The result is saved in phase UNSTAGING before anything is changed, and
 * unstage then runs as for any recorded volume: one teardown path, and a retry after a partial teardown
 * still finds what is left (once unmounted, nothing at the staging path would say so).
 *
 * <p>An encrypted volume's staging mount is its dm-crypt mapping: the volume's own (named by {@link CryptMappingName},
 * a LUKS2 uuid as cryptsetup gives it) is recorded as the record's opened mapping and traced through its one slave to
 * the attached device, so unstage closes it after the unmount and before the device is flushed and detached. A mapping
 * named as blocknode names another volume's is left alone; any other dm device is traced as it is, and never closed.
 *
 * <p>A device no transport recognizes (a loop device, a disk already on the node) is recorded as the fallback
 * transport's ({@link Transports#fallback}: the local one): unmounted and flushed, never detached. A block
 * volume leaves no mount at its staging path, so without its record nothing can be found for it.
 */
final class StagingRecordRebuilder {

    private static final Logger LOG = Logger.getLogger(StagingRecordRebuilder.class.getName());

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;
    private final Transports transports;
    private final FenceKey node;
    private final DeviceClaims claims;

    StagingRecordRebuilder(Host host, KubeletPaths paths, StagingRecords records, Transports transports,
                           FenceKey node, DeviceClaims claims) {
        this.host = host;
        this.paths = paths;
        this.records = records;
        this.transports = transports;
        this.node = node;
        this.claims = claims;
    }

    /**
     * The rebuilt record, saved; empty when nothing of the volume is mounted at {@code staging} (never
     * staged, or torn down already) or when the mount there is another volume's: another record names the path
     * (as its staging path or a publication) or the device mounted there (by number, as {@link DeviceClaims}
     * compares them). A path is no proof that a mount is this volume's; another volume's record is proof that it
     * is not.
     */
    Optional<StagingRecord> rebuild(String volumeId, Path staging) throws VolumeException {
        Optional<Found> mounted = stagedFilesystemAt(volumeId, staging);
        if (mounted.isEmpty()) {
            return Optional.empty();
        }
        Found found = mounted.get();
        DeviceNumber number = found.number();
        Optional<DeviceMapperId> dm = deviceMapperId(volumeId, number);
        Optional<CryptMapping> mapping = Optional.empty();
        if (dm.isPresent() && CryptMappingName.isVolumesMapping(volumeId, dm.get().name(), dm.get().uuid())) {
            mapping = Optional.of(cryptMapping(volumeId, number, dm.get().name()));
        } else if (dm.isPresent() && CryptMappingName.hasForm(dm.get().name())) {
            // Named as blocknode names a mapping, but not this volume's LUKS2 one: another volume's, never closed or
            // torn down on this one's behalf (the name is a digest of the volume id: no volume's can be another's).
            String name = dm.get().name();
            LOG.warning(() -> "volume " + volumeId + " is not staged, and " + staging + " holds dm device " + name
                    + " (" + number + "), which is not its dm-crypt mapping; leaving it alone");
            return Optional.empty();
        }
        // Through the volume's mapping to the device it is open over: what a transport attached.
        DeviceNumber attached = mapping.map(CryptMapping::over).orElse(number);
        Attachment attachment = attachmentOf(volumeId, number, attached);
        Optional<StagingRecord> holder = claims.holderOf(volumeId, attached, attachment.identity());
        if (holder.isPresent()) {
            LOG.warning(() -> "volume " + volumeId + " is not staged, and " + staging + " holds device " + attached
                    + ", which is volume " + holder.get().getVolumeId() + "'s (staged at "
                    + holder.get().getStagingPath() + "); leaving it alone");
            return Optional.empty();
        }
        // Read from the host now: the numbers are this boot's.
        StagingRecord record = records.stampBoot(recordOf(found, attachment, attached, mapping)).build();
        records.save(record);
        String through = mapping.map(m -> "dm-crypt mapping " + m.name() + " over ").orElse("");
        LOG.warning(() -> "volume " + volumeId + " has no staging record but " + staging + " is mounted (device "
                + number + "); rebuilt its record from the host to tear it down: " + through + "transport "
                + attachment.transport() + ", device " + attachment.device()
                + (attachment.details().isEmpty() ? "" : ", " + attachment.details()));
        return Optional.of(record);
    }

    /** A filesystem mounted at a volume's staging path: the device it is on, and the mount table's line for it. */
    private record Found(String volumeId, Path staging, DeviceNumber number, Optional<MountEntry> mount) {
    }

    /**
     * The filesystem mounted at {@code staging}, unless nothing is, or what is mounted there is no staged filesystem,
     * or another volume's record claims the path.
     */
    private Optional<Found> stagedFilesystemAt(String volumeId, Path staging) throws VolumeException {
        // By descriptor, following no symlink: a staging path swapped for a link to some other mount must not
        // make that mount's device this volume's (and then the teardown's).
        Optional<OpenedPath> parent = paths.openParentIfPresent("staging_target_path", staging);
        if (parent.isEmpty()) {
            return Optional.empty();
        }
        try (OpenedPath directory = parent.get()) {
            Path entry = directory.childViaDescriptor(staging.getFileName().toString());
            FileStat stat;
            try {
                stat = host.mounter().stat(entry);
            } catch (NoSuchPathException absent) {
                return Optional.empty();
            }
            if (!isUnclaimedFilesystemMount(volumeId, staging, entry, stat)) {
                return Optional.empty();
            }
            // No readable record claims the path; an unreadable one might: never guess with another's mount.
            records.requireNoUnreadable("the mount at staging path " + staging);
            Optional<MountEntry> mount = host.mounter()
                    .mountsWhere(e -> e.mountPoint().equals(staging) && e.device().equals(stat.device()))
                    .stream().reduce((a, b) -> b);
            return Optional.of(new Found(volumeId, staging, stat.device(), mount));
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect staging path " + staging + " of volume " + volumeId, e);
        }
    }

    /** True when {@code entry} (the staging path, by descriptor) is a directory mount no other volume claims. */
    private boolean isUnclaimedFilesystemMount(String volumeId, Path staging, Path entry, FileStat stat)
            throws IOException, VolumeException {
        if (stat.isSymlink()) {
            throw KubeletPaths.symlinkRefused("staging_target_path", staging);
        }
        if (!Publications.isMountPoint(host, entry, stat)) {
            return false;
        }
        if (!stat.isDirectory()) {
            // A bind of a device node (a block publication, kubelet's own bind of one) or of a file: no
            // filesystem is staged here, and its statx device is the filesystem the node lives on (devtmpfs),
            // not a volume's. A block volume leaves nothing at its staging path to rebuild from.
            LOG.warning(() -> "volume " + volumeId + " is not staged, and " + staging + " holds a mount that is"
                    + " not a staged filesystem; leaving it alone");
            return false;
        }
        Optional<StagingRecord> owner = claims.claimantOf(volumeId, staging);
        if (owner.isPresent()) {
            LOG.warning(() -> "volume " + volumeId + " is not staged, and " + staging + " holds volume "
                    + owner.get().getVolumeId() + "; leaving it alone");
            return false;
        }
        return true;
    }

    /**
     * The attachment the transport that recognizes {@code attached} reports, else the fallback transport's
     * ({@code number} is the mounted device, named in the refusal when no transport takes it).
     */
    private Attachment attachmentOf(String volumeId, DeviceNumber number, DeviceNumber attached)
            throws VolumeException {
        for (Transport transport : transports.all()) {
            Optional<Attachment> found = transport.attachmentOf(attached);
            if (found.isPresent()) {
                return found.get();
            }
        }
        Transport fallback = transports.fallback().orElseThrow(() -> VolumeException.internal("device " + number
                + " of volume " + volumeId + " is recognized by no transport, and none takes such devices", null));
        return new Attachment(fallback.name(), nodeFor(volumeId, attached), attached, "", java.util.Map.of());
    }

    /** The record of what was found, in phase UNSTAGING (no boot id yet). */
    private StagingRecord.Builder recordOf(Found found, Attachment attachment, DeviceNumber attached,
                                           Optional<CryptMapping> mapping) {
        // Whether it was fenced is not known: a transport that fences releases whatever this node's tag holds there.
        boolean fences = transports.named(attachment.transport()).flatMap(Transport::fencing).isPresent();
        StagingRecord.Builder builder = StagingRecord.newBuilder()
                .setVolumeId(found.volumeId())
                .setPhase(StagePhase.UNSTAGING)
                .setTransport(attachment.transport())
                .setStagingPath(found.staging().toString())
                .setDevice(DeviceRecord.newBuilder()
                        .setPath(attachment.device().toString())
                        .setMajor(attached.major())
                        .setMinor(attached.minor())
                        .setIdentity(attachment.identity()))
                .setMount(MountAccessRecord.newBuilder().setFsType(found.mount().map(MountEntry::fsType).orElse("")))
                .putAllAttachment(attachment.details())
                .setFenceKey(fences ? node.value() : 0);
        // Unstage closes a recorded mapping after the unmount and before the device below is flushed and detached.
        mapping.ifPresent(m -> builder.setCrypt(CryptRecord.newBuilder().setMappingName(m.name())
                .setOpened(DeviceRecord.newBuilder().setPath(m.node().toString())
                        .setMajor(m.number().major()).setMinor(m.number().minor()))));
        return builder;
    }

    /** The volume's open LUKS2 mapping: its name, its device and node, and the one device it is open over. */
    private record CryptMapping(String name, DeviceNumber number, Path node, DeviceNumber over) {
    }

    private Optional<DeviceMapperId> deviceMapperId(String volumeId, DeviceNumber number) throws VolumeException {
        try {
            return host.blockDevices().deviceMapperId(number);
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the device-mapper name of device " + number + " of volume "
                    + volumeId, e);
        }
    }

    /**
     * cryptsetup opens a LUKS2 mapping over one device (its one slave); a mapping of the volume's name over none or
     * several was not made by a stage, and is not traced to anything to detach.
     */
    private CryptMapping cryptMapping(String volumeId, DeviceNumber number, String name) throws VolumeException {
        try {
            List<String> slaves = host.blockDevices().slaves(number);
            Optional<DeviceNumber> over = slaves.size() == 1 ? host.blockDevices().numberOf(slaves.getFirst())
                    : Optional.empty();
            if (over.isEmpty()) {
                throw VolumeException.precondition("volume " + volumeId + " is not staged, and its staging path holds"
                        + " its dm-crypt mapping " + name + " (" + number + "), open over " + slaves + " rather than"
                        + " one device; nothing was unstaged: unmount it and close it with cryptsetup close " + name);
            }
            return new CryptMapping(name, number, nodeFor(volumeId, number), over.get());
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell what dm-crypt mapping " + name + " of volume " + volumeId
                    + " is open over", e);
        }
    }

    private Path nodeFor(String volumeId, DeviceNumber number) throws VolumeException {
        try {
            return host.blockDevices().nodeFor(number).orElse(host.paths().dev().resolve("block/" + number));
        } catch (IOException e) {
            throw VolumeException.internal("cannot name device " + number + " of volume " + volumeId, e);
        }
    }
}
