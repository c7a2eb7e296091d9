package dev.blocknode.os.host;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.os.uevent.NetlinkUeventSource;

import java.io.IOException;
import java.util.Optional;

/**
 * The kernel features the plugin uses where the kernel has them, asked of this kernel the way the plugin meets
 * them (through its native library, from inside its container): openat2 for paths beneath the kubelet root,
 * mount_setattr for binds that carry their flags, the netlink uevent socket that device waits wake on. Each has
 * a fallback in the plugin (the component walk, the moved bind, polling), so a missing one is slower, not
 * broken; without the native library itself no volume can be staged. A test supplies its own answers.
 */
public interface KernelFeatures {

    /** A feature the plugin uses. */
    enum Feature { NATIVE_LIBRARY, OPENAT2, MOUNT_SETATTR, UEVENT_SOCKET }

    /** Empty when the kernel has the feature here; else why it cannot be used. */
    Optional<String> missing(Feature feature);

    /** This kernel's, through the native library (which is loaded if it is not yet). */
    static KernelFeatures real() {
        return feature -> {
            try {
                NativeLibrary.load();
            } catch (LinkageError e) {
                return Optional.of("the native library cannot be loaded: " + e.getMessage());
            }
            return switch (feature) {
                case NATIVE_LIBRARY -> Optional.empty();
                case OPENAT2 -> LinuxNative.kernelHasOpenat2() ? Optional.empty()
                        : Optional.of("the kernel answers ENOSYS to openat2 (Linux 5.6)");
                case MOUNT_SETATTR -> LinuxNative.kernelHasMountSetattr() ? Optional.empty()
                        : Optional.of("the kernel answers ENOSYS to mount_setattr (Linux 5.12)");
                case UEVENT_SOCKET -> ueventSocketMissing();
            };
        };
    }

    private static Optional<String> ueventSocketMissing() {
        try (NetlinkUeventSource source = NetlinkUeventSource.open()) {
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("the netlink uevent socket cannot be opened: " + e.getMessage());
        }
    }
}
