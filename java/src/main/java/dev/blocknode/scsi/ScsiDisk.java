package dev.blocknode.scsi;

import dev.blocknode.os.DeviceNumber;

import java.nio.file.Path;

/**
 * A SCSI disk as the kernel shows it at one moment: its address, its block device's kernel name ("sdb"),
 * device number and /dev node. One path of a LUN; a multipathed LUN has one of these per path.
 */
public record ScsiDisk(ScsiAddress address, String name, DeviceNumber number, Path devicePath) {

    @Override
    public String toString() {
        return name + " (" + address + ", " + number + ")";
    }
}
