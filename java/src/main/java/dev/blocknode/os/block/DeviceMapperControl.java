package dev.blocknode.os.block;

import dev.blocknode.os.Errno;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;
import java.nio.file.Path;

import static dev.blocknode.os.SyscallException.retyped;

/** {@link DeviceMapper} through ioctls on the host's /dev/mapper/control. */
public final class DeviceMapperControl implements DeviceMapper {

    private final Path control;

    public DeviceMapperControl(HostPaths host) {
        this.control = host.dev().resolve("mapper/control");
    }

    @Override
    public boolean message(String map, String message) throws IOException {
        try {
            return call(() -> {
                LinuxNative.deviceMapperMessage(control.toString(), map, message);
                return true;
            });
        } catch (SyscallException e) {
            if (e.errno() == Errno.ENXIO) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public int openCount(String map) throws IOException {
        return call(() -> LinuxNative.deviceMapperOpenCount(control.toString(), map));
    }

    @Override
    public Removal remove(String map) throws IOException {
        try {
            return call(() -> {
                LinuxNative.deviceMapperRemove(control.toString(), map);
                return Removal.REMOVED;
            });
        } catch (SyscallException e) {
            return switch (e.errno()) {
                case EBUSY -> Removal.BUSY;
                case ENXIO -> Removal.ABSENT;
                default -> throw e;
            };
        }
    }

    /**
     * Runs one call, its failure re-typed; one that says the control node cannot be used (it would not open, or the
     * kernel does not know the request) becomes an {@link UnavailableException}.
     */
    private <T> T call(SyscallException.NativeCall<T> call) throws IOException {
        try {
            return retyped(call);
        } catch (SyscallException e) {
            if ("open".equals(e.syscall()) || e.errno() == Errno.ENOTTY || e.errno() == Errno.EINVAL) {
                throw new UnavailableException("device-mapper control " + control + " unusable: " + e.getMessage(), e);
            }
            throw e;
        }
    }
}
