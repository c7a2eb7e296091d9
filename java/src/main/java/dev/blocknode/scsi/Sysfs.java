package dev.blocknode.scsi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * Reading sysfs where devices come and go between two reads: an attribute or directory that is not there
 * is an answer ("absent"), not an error. Kernel text attributes end in a newline, which is dropped.
 */
public final class Sysfs {

    private Sysfs() {
    }

    /** The attribute's text without its trailing newline and padding, or empty when it does not exist. */
    public static Optional<String> read(Path attribute) throws IOException {
        return readBytes(attribute).map(bytes -> new String(bytes, StandardCharsets.UTF_8).strip());
    }

    /** A binary attribute (such as vpd_pg83), or empty when it does not exist. */
    public static Optional<byte[]> readBytes(Path attribute) throws IOException {
        try {
            return Optional.of(Files.readAllBytes(attribute));
        } catch (IOException e) {
            if (isGone(e)) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /** The entries of a sysfs directory, sorted; empty when the directory does not exist. */
    public static List<String> list(Path directory) throws IOException {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
            for (Path entry : entries) {
                names.add(entry.getFileName().toString());
            }
        } catch (IOException e) {
            if (isGone(e) || e instanceof NotDirectoryException) {
                return List.of();
            }
            throw e;
        }
        Collections.sort(names);
        return names;
    }

    /** The last element of the path a symlink resolves to (a device's own name), or empty if absent. */
    public static Optional<String> linkTargetName(Path link) throws IOException {
        try {
            return Optional.of(link.toRealPath().getFileName().toString());
        } catch (IOException e) {
            if (isGone(e)) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * True for the errors sysfs gives for a device that vanished: ENOENT, and ENODEV/ENXIO from an attribute
     * whose device is being torn down while it is read.
     */
    public static boolean isGone(IOException e) {
        if (e instanceof NoSuchFileException) {
            return true;
        }
        if (e instanceof FileSystemException fs && fs.getReason() != null) {
            String reason = fs.getReason();
            return reason.contains("No such device");
        }
        return e.getMessage() != null && e.getMessage().contains("No such device");
    }
}
