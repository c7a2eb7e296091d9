package dev.blocknode.e2e.controller;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * configfs as the kernel's targets take their configuration (nvmet, LIO): one write per attribute, and
 * directories removed with rmdir(2), which configfs allows with the attributes still inside (they go with the
 * directory). The backends' unit tests run on a plain directory, where that needs the files removed first: they
 * pass their own {@link Rmdir}.
 */
final class Configfs {

    /** Removes a configfs directory. */
    @FunctionalInterface
    interface Rmdir {
        void remove(Path dir) throws IOException;

        /** rmdir(2), as configfs wants it. */
        Rmdir KERNEL = Files::delete;
    }

    private Configfs() {
    }

    /**
     * One write of the value, as configfs attributes take it.
     *
     * @param module the kernel module whose attribute it is, named when the attribute does not exist
     */
    static void write(Path attribute, String value, String module) throws IOException {
        try {
            Files.writeString(attribute, value, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new IOException("no configfs attribute " + attribute + " (is " + module + " loaded?)", e);
        }
    }
}
