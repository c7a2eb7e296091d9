package dev.blocknode.doctor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

/** The host's configuration and kernel files the checks read: small text, absent being an answer too. */
final class HostFiles {

    private HostFiles() {
    }

    /** The file's text; empty when there is no such file. */
    static Optional<String> read(Path file) throws IOException {
        try {
            return Optional.of(Files.readString(file, StandardCharsets.UTF_8));
        } catch (NoSuchFileException absent) {
            return Optional.empty();
        }
    }
}
