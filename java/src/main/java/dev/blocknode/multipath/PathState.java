package dev.blocknode.multipath;

import dev.blocknode.scsi.ScsiDeviceState;

/** One path of a multipath map and the kernel's state of its SCSI device: what VolumeCondition reports. */
public record PathState(String name, ScsiDeviceState state) {

    public boolean healthy() {
        return state.isRunning();
    }
}
