package dev.blocknode.os.natives;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** A loop device over a sparse file, attached with {@code losetup --find --show}. */
final class LoopDevice implements AutoCloseable {

    final Path backingFile;
    /** e.g. /dev/loop3 */
    final String device;
    private boolean detached;

    private LoopDevice(Path backingFile, String device) {
        this.backingFile = backingFile;
        this.device = device;
    }

    /** Creates (or reuses) a sparse backing file of {@code size} bytes and attaches it. */
    static LoopDevice attach(Path backingFile, long size, boolean readOnly) throws IOException {
        if (!Files.exists(backingFile)) {
            try (RandomAccessFile file = new RandomAccessFile(backingFile.toFile(), "rw")) {
                file.setLength(size);
            }
        }
        List<String> command = new ArrayList<>(List.of("losetup", "--find", "--show"));
        if (readOnly) {
            command.add("--read-only");
        }
        command.add(backingFile.toString());
        String device = Commands.run(command.toArray(String[]::new)).strip();
        if (!device.startsWith("/dev/loop")) {
            throw new IOException("losetup printed " + device);
        }
        return new LoopDevice(backingFile, device);
    }

    /** "major:minor" as the kernel lists it in sysfs, independent of the code under test. */
    String majorMinor() throws IOException {
        String name = Path.of(device).getFileName().toString();
        return Files.readString(Path.of("/sys/class/block", name, "dev")).strip();
    }

    @Override
    public void close() throws IOException {
        if (!detached) {
            Commands.run("losetup", "-d", device);
            detached = true;
        }
    }

    @Override
    public String toString() {
        return device + " (" + backingFile + ")";
    }
}
