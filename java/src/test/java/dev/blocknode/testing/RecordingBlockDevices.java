package dev.blocknode.testing;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BlockDevices whose flush (BLKFLSBUF) is recorded instead of issued: fabricated /dev nodes are plain
 * files. A missing node fails like open(2) would; a failure can be injected per device. The size and the
 * exclusive-open check of a device given {@link #sized} or {@link #claimed} are answered from here too.
 */
public final class RecordingBlockDevices extends BlockDevices {

    private final List<Path> flushed = new ArrayList<>();
    private final Map<Path, IOException> failures = new HashMap<>();
    private final Map<Path, Long> sizes = new HashMap<>();
    private final Map<Path, Boolean> claims = new HashMap<>();

    public RecordingBlockDevices(HostPaths paths) {
        super(paths);
    }

    @Override
    public synchronized void flush(Path device) throws IOException {
        if (!Files.exists(device)) {
            throw new NoSuchFileException(device.toString());
        }
        IOException failure = failures.get(device);
        if (failure != null) {
            throw failure;
        }
        flushed.add(device);
    }

    @Override
    public synchronized long sizeBytes(Path device) throws IOException {
        Long size = sizes.get(device);
        return size != null ? size : super.sizeBytes(device);
    }

    @Override
    public synchronized boolean isClaimed(Path device) throws IOException {
        Boolean claimed = claims.get(device);
        return claimed != null ? claimed : super.isClaimed(device);
    }

    public synchronized RecordingBlockDevices sized(Path device, long bytes) {
        sizes.put(device, bytes);
        return this;
    }

    /** Whether an exclusive open of {@code device} fails (something holds it), as asked from now on. */
    public synchronized RecordingBlockDevices claimed(Path device, boolean claimed) {
        claims.put(device, claimed);
        return this;
    }

    public synchronized void failFlush(Path device, IOException failure) {
        failures.put(device, failure);
    }

    public synchronized List<Path> flushed() {
        return List.copyOf(flushed);
    }
}
