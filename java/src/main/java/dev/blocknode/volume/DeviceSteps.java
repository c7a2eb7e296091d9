package dev.blocknode.volume;

/**
 * The steps a stage takes on its device between the attach and the mount, each of which unstage and a refused
 * stage undo: the claim on the device, the reservation at the storage, the LUKS2 mapping, the filesystem this
 * plugin made.
 */
record DeviceSteps(DeviceClaims claims, VolumeFences fences, VolumeEncryption encryption,
                   FilesystemPreparer filesystems, UnmountedFormat unmountedFormat) {
}
