package dev.blocknode.scsi;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * SCSI disks through sysfs: find the disk at an address or by name, read who it is and how it is, rescan
 * its size, and remove it safely. Every read tolerates the device vanishing in the middle ("absent"),
 * because paths come and go under us: a link bounce, multipathd, another volume's teardown.
 */
public final class ScsiDevices {

    private static final Logger LOG = Logger.getLogger(ScsiDevices.class.getName());

    private final HostPaths paths;
    private final SysfsWriter writer;
    private final BlockDevices blockDevices;

    public ScsiDevices(HostPaths paths, SysfsWriter writer, BlockDevices blockDevices) {
        this.paths = paths;
        this.writer = writer;
        this.blockDevices = blockDevices;
    }

    /** The disk whose SCSI device is at {@code address}, when there is one with a block device. */
    public Optional<ScsiDisk> diskAt(ScsiAddress address) throws IOException {
        Path blockDir = paths.sys().resolve("class/scsi_device/" + address + "/device/block");
        for (String name : Sysfs.list(blockDir)) {
            Optional<DeviceNumber> number = deviceNumber(name);
            if (number.isPresent()) {
                return Optional.of(new ScsiDisk(address, name, number.get(), paths.dev().resolve(name)));
            }
        }
        return Optional.empty();
    }

    /** The SCSI disk with kernel name {@code name} ("sdb"), when it exists and is a SCSI disk. */
    public Optional<ScsiDisk> diskNamed(String name) throws IOException {
        Optional<String> addressText = Sysfs.linkTargetName(classBlock(name).resolve("device"));
        if (addressText.isEmpty()) {
            return Optional.empty();
        }
        ScsiAddress address;
        try {
            address = ScsiAddress.parse(addressText.get());
        } catch (IllegalArgumentException notScsi) {
            return Optional.empty();
        }
        return deviceNumber(name).map(number -> new ScsiDisk(address, name, number, paths.dev().resolve(name)));
    }

    /** Every SCSI disk of the node (each path separately), in address order. */
    public List<ScsiDisk> disks() throws IOException {
        List<ScsiDisk> disks = new ArrayList<>();
        for (String entry : Sysfs.list(paths.sys().resolve("class/scsi_device"))) {
            ScsiAddress address;
            try {
                address = ScsiAddress.parse(entry);
            } catch (IllegalArgumentException notAnAddress) {
                continue;
            }
            diskAt(address).ifPresent(disks::add);
        }
        disks.sort((a, b) -> compare(a.address(), b.address()));
        return disks;
    }

    /** True while the same disk (same name) is still at its address. */
    public boolean isPresent(ScsiDisk disk) throws IOException {
        return diskAt(disk.address()).filter(now -> now.name().equals(disk.name())).isPresent();
    }

    public ScsiDeviceState state(ScsiDisk disk) throws IOException {
        return Sysfs.read(classBlock(disk.name()).resolve("device/state"))
                .map(ScsiDeviceState::parse).orElse(ScsiDeviceState.GONE);
    }

    /**
     * Which LUN the disk is: from the kernel's {@code device/wwid} and the raw {@code device/vpd_pg83}.
     * The WWID is the one multipath derives from page 0x83; without a readable page, the kernel's. Empty
     * when the disk reports neither (or vanished).
     */
    public Optional<LunIdentity> identity(ScsiDisk disk) throws IOException {
        Path device = classBlock(disk.name()).resolve("device");
        Optional<Wwid> kernel = Optional.empty();
        Optional<String> text = Sysfs.read(device.resolve("wwid"));
        if (text.isPresent() && !text.get().isEmpty()) {
            try {
                kernel = Optional.of(Wwid.fromSysfs(text.get()));
            } catch (IllegalArgumentException unreadable) {
                LOG.warning(() -> disk + " has a wwid attribute this code cannot read: \"" + text.get() + "\"");
            }
        }
        List<Wwid> designators = List.of();
        Optional<Wwid> preferred = Optional.empty();
        Optional<byte[]> page = Sysfs.readBytes(device.resolve("vpd_pg83"));
        if (page.isPresent() && page.get().length > 0) {
            try {
                VpdPage83 parsed = VpdPage83.parse(page.get());
                designators = parsed.lunWwids();
                preferred = parsed.preferredWwid();
            } catch (IllegalArgumentException unreadable) {
                LOG.warning(() -> disk + " has a vpd_pg83 this code cannot read: " + unreadable.getMessage());
            }
        }
        Optional<Wwid> wwid = preferred.isPresent() ? preferred : kernel;
        if (wwid.isEmpty()) {
            return Optional.empty();
        }
        List<Wwid> all = new ArrayList<>(designators);
        kernel.ifPresent(all::add);
        return Optional.of(new LunIdentity(wwid.get(), all));
    }

    /**
     * Refuses a path device opened for commands (its descriptor's number {@code opened}) unless the disk of its
     * name still has that number and {@code path}'s LUN behind it. The open descriptor keeps the disk's name and
     * number from passing to another disk, so the answer holds for as long as it stays open.
     */
    public void requirePathOf(LunPath path, DeviceNumber opened) throws IOException {
        String name = path.device().getFileName().toString();
        Optional<ScsiDisk> disk = diskNamed(name);
        if (disk.isEmpty() || !disk.get().number().equals(opened)) {
            throw new IOException("path device " + path.device() + " is not the SCSI disk " + opened.major() + ":"
                    + opened.minor() + " that was opened (gone, or another disk); no command sent through it");
        }
        Optional<LunIdentity> identity = identity(disk.get());
        if (identity.isEmpty() || !identity.get().matches(path.lun())) {
            throw new IOException("path device " + path.device() + " leads to "
                    + identity.map(i -> "LUN " + i.wwid()).orElse("a disk without an identity") + " now, not LUN "
                    + path.lun() + "; no command sent through it");
        }
    }

    /** The block devices stacked on this one (dm maps, md arrays): /sys/class/block/NAME/holders/*. */
    public List<String> holders(String name) throws IOException {
        return Sysfs.list(classBlock(name).resolve("holders"));
    }

    /**
     * Asks the kernel to look at the LUN again (writes "1" to device/rescan, which the kernel handles before the
     * write returns): it re-reads the capacity (after the LUN grew on the array) and the VPD pages, so the
     * disk's {@code wwid} and {@code vpd_pg83} say again which LUN is at its address.
     */
    public void rescan(ScsiDisk disk) throws IOException {
        writer.write(classBlock(disk.name()).resolve("device/rescan"), "1");
    }

    /**
     * Flushes the disk's buffers (BLKFLSBUF on its /dev node) and then deletes it from the kernel (writes "1"
     * to device/delete). A disk already gone is fine.
     *
     * <p>A flush failure stops the delete while the device is running: deleting would drop the unwritten
     * data. On a path that is not running the flush cannot reach the LUN anyway, and on a LUN that refuses
     * this node's writes under another node's reservation it never will (the node was fenced out): it is deleted
     * regardless, or it would stay behind forever.
     *
     * @return false when the disk was already gone (nothing done), true when it was deleted
     */
    public boolean remove(ScsiDisk disk) throws IOException {
        if (!isPresent(disk)) {
            return false;
        }
        try {
            blockDevices.flush(disk.devicePath());
        } catch (NoSuchFileException noNode) {
            LOG.warning(() -> "no device node " + disk.devicePath() + " to flush " + disk + " through; deleting it");
        } catch (IOException e) {
            ScsiDeviceState state = state(disk);
            if (state == ScsiDeviceState.GONE) {
                return false;
            }
            if (state.isRunning() && !BlockDevices.refusedByReservation(e)) {
                throw new IOException("cannot flush " + disk + " before deleting it: " + e.getMessage(), e);
            }
            String why = BlockDevices.refusedByReservation(e) ? "whose LUN refuses this node's writes under another"
                    + " node's reservation" : "which is " + state.sysfsName();
            LOG.warning(() -> "cannot flush " + disk + ", " + why + " (" + e.getMessage() + "); deleting it anyway");
        }
        try {
            writer.write(classBlock(disk.name()).resolve("device/delete"), "1");
            return true;
        } catch (IOException e) {
            if (Sysfs.isGone(e)) {
                return false;
            }
            throw e;
        }
    }

    private Optional<DeviceNumber> deviceNumber(String name) throws IOException {
        Optional<String> text = Sysfs.read(classBlock(name).resolve("dev"));
        if (text.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(DeviceNumber.parse(text.get()));
        } catch (IllegalArgumentException malformed) {
            throw new IOException("unreadable device number \"" + text.get() + "\" of " + name, malformed);
        }
    }

    private Path classBlock(String name) {
        return paths.sys().resolve("class/block").resolve(name);
    }

    private static int compare(ScsiAddress a, ScsiAddress b) {
        int c = Integer.compare(a.host(), b.host());
        if (c == 0) {
            c = Integer.compare(a.channel(), b.channel());
        }
        if (c == 0) {
            c = Integer.compare(a.target(), b.target());
        }
        return c != 0 ? c : Long.compare(a.lun(), b.lun());
    }
}
