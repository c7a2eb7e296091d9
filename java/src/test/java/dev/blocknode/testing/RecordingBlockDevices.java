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
 * files. A missing node fails like open(2) would; a failure can be injected per device.
 */
public final class RecordingBlockDevices extends BlockDevices {

    private final List<Path> flushed = new ArrayList<>();
    private final Map<Path, IOException> failures = new HashMap<>();

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

    public synchronized void failFlush(Path device, IOException failure) {
        failures.put(device, failure);
    }

    public synchronized List<Path> flushed() {
        return List.copyOf(flushed);
    }
}
