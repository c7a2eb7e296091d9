package dev.blocknode.testing;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.ProcessCommandRunner;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/** A real loop device over a sparse file, for host tests. close() detaches it and deletes the file. */
public final class LoopDevice implements AutoCloseable {

    private static final ProcessCommandRunner COMMANDS = new ProcessCommandRunner();

    private final Path backingFile;
    private final Path device;

    private LoopDevice(Path backingFile, Path device) {
        this.backingFile = backingFile;
        this.device = device;
    }

    public static LoopDevice create(Path dir, String name, long sizeBytes) throws IOException {
        Path file = dir.resolve(name + ".img");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(sizeBytes);
        }
        try {
            String device = COMMANDS.runChecked(Command.of("losetup", "--find", "--show", file.toString()))
                    .stdout().strip();
            return new LoopDevice(file, Path.of(device));
        } catch (CommandException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    public Path device() {
        return device;
    }

    public Path backingFile() {
        return backingFile;
    }

    /** Grows the backing file and tells the loop driver, as a SAN would grow a LUN. */
    public void grow(long newSizeBytes) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(backingFile.toFile(), "rw")) {
            raf.setLength(newSizeBytes);
        }
        COMMANDS.runChecked(Command.of("losetup", "--set-capacity", device.toString()));
    }

    @Override
    public void close() throws IOException {
        try {
            COMMANDS.runChecked(Command.of("losetup", "--detach", device.toString()));
        } finally {
            Files.deleteIfExists(backingFile);
        }
    }
}
