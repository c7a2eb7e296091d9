package dev.blocknode.volume.record;

import dev.blocknode.state.v1.StagingRecord;

/**
 * Which boot of the kernel a staging record's device numbers belong to. The kernel numbers devices afresh at
 * every boot: after a reboot, the number a record names may be nothing, or another volume's map, or a device the
 * transport does not know (an LVM volume, a dm-crypt mapping) and whose identity proves nothing either way.
 */
public enum RecordedBoot {
    /** Recorded in this boot: the numbers name the devices they named when recorded (unless detached since). */
    THIS_BOOT,
    /** Recorded in an earlier boot: the numbers name nothing of this volume's, whatever is at them now. */
    EARLIER_BOOT,
    /** Written before records carried a boot id: trusted as before (an upgrade rarely comes with a reboot). */
    UNKNOWN;

    public static RecordedBoot of(StagingRecord record, String bootId) {
        if (record.getBootId().isEmpty()) {
            return UNKNOWN;
        }
        return record.getBootId().equals(bootId) ? THIS_BOOT : EARLIER_BOOT;
    }
}
