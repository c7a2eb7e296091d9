package dev.blocknode.scsi;

import java.nio.file.Path;

/**
 * One path device of a LUN (one I_T nexus) as commands are sent down it: the device node, and the LUN it must
 * still lead to when they are, checked after the node is opened ({@link LunPathCheck}).
 */
public record LunPath(Path device, Wwid lun) {

    @Override
    public String toString() {
        return device.toString();
    }
}
