package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.Errno;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * Block devices as the kernel knows them: sizes and flushes through ioctls, names and liveness through
 * sysfs (by device number, so a /dev entry that was renamed or re-created cannot mislead us).
 */
public class BlockDevices {

    private final HostPaths host;

    public BlockDevices(HostPaths host) {
        this.host = host;
    }

    public long sizeBytes(Path device) throws IOException {
        return retyped(() -> LinuxNative.blockDeviceSize(device.toString()));
    }

    public int logicalSectorSize(Path device) throws IOException {
        return retyped(() -> LinuxNative.blockSectorSize(device.toString()));
    }

    /** Writes back dirty pages of the device and drops its buffer cache (BLKFLSBUF). */
    public void flush(Path device) throws IOException {
        retyped(() -> LinuxNative.flushBlockBuffers(device.toString()));
    }

    /**
     * Whether a flush failed because the storage refuses this node's writes under a reservation another node
     * holds (a SCSI RESERVATION CONFLICT or an NVMe Reservation Conflict, which the block layer reports as
     * EBADE): this node was fenced out. What it had not written back can never reach the volume from here, and
     * must not: the holder writes it now. Retrying cannot succeed until the holder lets go, and then it would
     * write stale data over the holder's.
     */
    public static boolean refusedByReservation(IOException flushFailure) {
        return flushFailure instanceof SyscallException failure && failure.errno() == Errno.EBADE;
    }

    /**
     * True when something on the node holds the device exclusively: a mounted filesystem, a device-mapper
     * map or md array built on it, swap (open with O_EXCL fails with EBUSY).
     */
    public boolean isClaimed(Path device) throws IOException {
        return retyped(() -> LinuxNative.isBlockDeviceClaimed(device.toString()));
    }

    /** The kernel names of devices stacked on this one (dm-3, md0), from sysfs holders/. */
    public List<String> holders(DeviceNumber number) throws IOException {
        return namesIn(number, "holders");
    }

    /** The kernel names of the devices this one is stacked on (a dm device's slaves/: sdb, dm-0), sorted. */
    public List<String> slaves(DeviceNumber number) throws IOException {
        return namesIn(number, "slaves");
    }

    /** The entries of one of the device's sysfs directories of other devices (holders/, slaves/), sorted. */
    private List<String> namesIn(DeviceNumber number, String directory) throws IOException {
        Path dir = host.sysBlockDevice(number).resolve(directory);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** The device number of the block device the kernel names {@code kernelName}, while it exists. */
    public Optional<DeviceNumber> numberOf(String kernelName) throws IOException {
        try {
            return Optional.of(DeviceNumber.parse(Files.readString(host.sys().resolve("class/block")
                    .resolve(kernelName).resolve("dev"), StandardCharsets.US_ASCII).strip()));
        } catch (NoSuchFileException gone) {
            return Optional.empty();
        }
    }

    /**
     * A device-mapper device's name and uuid (sysfs dm/name, dm/uuid: the uuid says which kind of map it is, as
     * "mpath-..." for multipath or "CRYPT-LUKS2-..." for a LUKS2 dm-crypt mapping); empty for any other device.
     */
    public Optional<DeviceMapperId> deviceMapperId(DeviceNumber number) throws IOException {
        Path dm = host.sysBlockDevice(number).resolve("dm");
        try {
            return Optional.of(new DeviceMapperId(
                    Files.readString(dm.resolve("name"), StandardCharsets.UTF_8).strip(),
                    Files.readString(dm.resolve("uuid"), StandardCharsets.UTF_8).strip()));
        } catch (NoSuchFileException notDm) {
            return Optional.empty();
        }
    }

    /**
     * True while the kernel still has this device: its entry in /sys/dev/block exists. The entry itself (a
     * symlink the kernel removes with the device), not what it points to: half the path walk, and this is
     * asked for every volume every minute.
     */
    public boolean exists(DeviceNumber number) {
        return Files.exists(host.sysBlockDevice(number), LinkOption.NOFOLLOW_LINKS);
    }

    /** The kernel's name for the device ("loop3", "sdb", "dm-2"), from its sysfs uevent file. */
    public Optional<String> kernelName(DeviceNumber number) throws IOException {
        try {
            for (String line : Files.readAllLines(host.sysBlockDevice(number).resolve("uevent"),
                    StandardCharsets.UTF_8)) {
                if (line.startsWith("DEVNAME=")) {
                    return Optional.of(line.substring("DEVNAME=".length()).strip());
                }
            }
            return Optional.empty();
        } catch (NoSuchFileException gone) {
            return Optional.empty();
        }
    }

    /** The /dev node of a device number, when the kernel still has the device. */
    public Optional<Path> nodeFor(DeviceNumber number) throws IOException {
        return kernelName(number).map(name -> host.dev().resolve(name));
    }

    /** True when the device is read-only at the block layer (sysfs "ro" attribute). */
    public boolean isReadOnly(DeviceNumber number) throws IOException {
        try {
            return Files.readString(host.sysBlockDevice(number).resolve("ro"), StandardCharsets.US_ASCII)
                    .strip().equals("1");
        } catch (NoSuchFileException gone) {
            return false;
        }
    }
}
