package dev.blocknode.os;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * This process's resident memory as the kernel counts it (VmRSS of /proc/self/status): the figure a container's
 * memory limit is measured against, which the JVM's own heap and non-heap figures leave out (thread stacks,
 * the native heap, the JNI core, mapped code).
 */
public final class ProcessStatus {

    private static final int MAX_BYTES = 64 * 1024;

    private ProcessStatus() {
    }

    /** Resident bytes, or empty when the status cannot be read (a /proc that is not Linux's). */
    public static OptionalLong residentBytes(HostPaths paths) {
        try {
            Optional<byte[]> status = SmallFiles.readRegularIfPresent(paths.ownStatus(), MAX_BYTES);
            return status.isEmpty() ? OptionalLong.empty()
                    : residentBytes(new String(status.get(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            return OptionalLong.empty();
        }
    }

    /** From the text of a status file: "VmRSS:     12345 kB". */
    static OptionalLong residentBytes(String status) {
        for (String line : status.lines().toList()) {
            if (line.startsWith("VmRSS:")) {
                String[] fields = line.substring("VmRSS:".length()).strip().split("\\s+");
                if (fields.length == 2 && fields[1].equals("kB")) {
                    try {
                        return OptionalLong.of(Long.parseLong(fields[0]) * 1024);
                    } catch (NumberFormatException unreadable) {
                        return OptionalLong.empty();
                    }
                }
            }
        }
        return OptionalLong.empty();
    }
}
