package dev.blocknode.scsi;

import dev.blocknode.os.DeviceNumber;

import java.io.IOException;

/**
 * Whether a path device opened for commands is still a path of the LUN it was listed for, asked by the opened
 * device's number ({@link dev.blocknode.os.block.ScsiPassThrough}): {@link ScsiDevices#requirePathOf} on a
 * node.
 */
@FunctionalInterface
public interface LunPathCheck {

    /** @throws IOException when it is not (another disk has the name now, another LUN is behind it, it is gone) */
    void require(LunPath path, DeviceNumber opened) throws IOException;
}
