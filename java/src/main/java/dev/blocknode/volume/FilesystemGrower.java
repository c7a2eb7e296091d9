package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.PermissionDeniedException;
import dev.blocknode.os.fd.OpenedFilesystem;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Grows a staged volume's filesystem online to its device's size, by descriptor: the staging path is opened
 * beneath the kubelet root (no symlink followed, as every request path), must be a directory that is the root of
 * a mount of the volume's recorded device, is opened again for reading and checked again, and the grow ioctl goes
 * to that descriptor. No tool is run: xfs_growfs and resize2fs look the mount up by name (xfs_growfs by the path,
 * resize2fs by the device's entry in the mount table, then its mount point's name), and a writer under the root
 * that swaps a component of the staging path for a symlink turns that name into another filesystem.
 *
 * <p>The device number is what makes it safe: the ioctl acts on the filesystem of the descriptor's inode, and that
 * inode is on the volume's device. The mount-root check keeps it to the staging mount itself.
 */
final class FilesystemGrower {

    /** x86-64's page size: like resize2fs, an ext4 of smaller blocks is grown to whole pages only. */
    private static final long PAGE_SIZE = 4096;

    static final String EXT4_PERMISSION_HINT =
            " (ext4 grows online only for a process with CAP_SYS_RESOURCE: run the plugin privileged;"
                    + " the kernel also refuses a filesystem with recorded errors, see its log)";

    private final Host host;
    private final KubeletPaths paths;

    FilesystemGrower(Host host, KubeletPaths paths) {
        this.host = host;
        this.paths = paths;
    }

    /**
     * @param deviceBytes the device's size now; the filesystem is grown to as many whole blocks, never shrunk
     * @return whether the filesystem grew (false: it already filled the device)
     * @throws VolumeException INVALID_ARGUMENT when the staging path leads through a symlink, NOT_FOUND when the
     *         volume's filesystem is not mounted there, INTERNAL when the kernel refuses the grow
     */
    boolean grow(String volumeId, StagingRecord record, FilesystemType type, long deviceBytes) throws VolumeException {
        Path staging = Path.of(record.getStagingPath());
        DeviceNumber device = StagingRecords.usedNumber(record);
        Optional<OpenedPath> opened = paths.openIfPresent("staging_target_path", staging);
        if (opened.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + " is not mounted at its staging path " + staging);
        }
        try (OpenedPath path = opened.get()) {
            FileStat stat = path.stat();
            requireVolumeRoot(volumeId, staging, device, stat, Publications.isMountPoint(host, staging, stat));
            try (OpenedFilesystem filesystem = path.reopenForIoctl()) {
                FileStat reopened = filesystem.stat();
                if (!reopened.sameFileAs(stat)) {
                    throw VolumeException.notFound("volume " + volumeId + ": the staging path " + staging
                            + " changed while it was opened");
                }
                requireVolumeRoot(volumeId, staging, device, reopened, reopened.mountRoot() != FileStat.MountRoot.NO);
                return switch (type) {
                    case XFS -> growXfs(filesystem, deviceBytes);
                    case EXT4 -> growExt4(filesystem, StagingRecords.usedPath(record), deviceBytes);
                };
            }
        } catch (PermissionDeniedException e) {
            throw VolumeException.internal(failed(type, volumeId, staging)
                    + (type == FilesystemType.EXT4 ? EXT4_PERMISSION_HINT : " (it needs CAP_SYS_ADMIN)"), e);
        } catch (IOException e) {
            throw VolumeException.internal(failed(type, volumeId, staging), e);
        }
    }

    /** A directory that is a mount root on the volume's device; otherwise the volume is not (or no longer) there. */
    private static void requireVolumeRoot(String volumeId, Path staging, DeviceNumber device, FileStat stat,
                                          boolean mountRoot) throws VolumeException {
        if (!stat.isDirectory() || !mountRoot || !stat.device().equals(device)) {
            throw VolumeException.notFound("volume " + volumeId + " is not mounted at its staging path " + staging
                    + " (found " + (stat.isDirectory() ? "a directory" : "no directory") + " on device "
                    + stat.device() + (mountRoot ? ", a mount root" : ", not a mount root") + "; its device is "
                    + device + ")");
        }
    }

    /** What xfs_growfs -d does: the data section to the device's whole blocks, imaxpct kept, never smaller. */
    private static boolean growXfs(OpenedFilesystem filesystem, long deviceBytes) throws IOException {
        OpenedFilesystem.XfsGeometry geometry = filesystem.xfsGeometry();
        long blocks = deviceBytes / geometry.blockSize();
        if (blocks <= geometry.dataBlocks()) {
            return false;
        }
        filesystem.xfsGrowData(blocks, geometry.imaxpct());
        return true;
    }

    /**
     * What resize2fs does to a mounted ext4: the device's whole blocks (whole pages), and nothing asked of the kernel
     * when the superblock already says as many or more (the ioctl needs CAP_SYS_RESOURCE even to do nothing).
     */
    private static boolean growExt4(OpenedFilesystem filesystem, Path device, long deviceBytes) throws IOException {
        long blockSize = filesystem.blockSize();
        long blocks = deviceBytes / blockSize;
        if (blockSize < PAGE_SIZE) {
            blocks -= blocks % (PAGE_SIZE / blockSize);
        }
        if (blocks <= filesystem.ext4BlockCount(device)) {
            return false;
        }
        filesystem.ext4Resize(blocks);
        return true;
    }

    private static String failed(FilesystemType type, String volumeId, Path staging) {
        return "growing the " + type.kernelName() + " filesystem of volume " + volumeId + " at " + staging
                + " failed";
    }
}
