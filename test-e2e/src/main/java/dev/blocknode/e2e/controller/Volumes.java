package dev.blocknode.e2e.controller;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.logging.Logger;

/**
 * The test controller's volumes, in memory: each one a sparse file under the work directory, exposed to
 * the node by a {@link VolumeBackend} (a loop device, or a LUN of a tgt target). Every method is
 * synchronized; callers that need check-then-act (create by name) lock on this object around both steps.
 * {@link #close()} withdraws every volume this registry exposed, deletes every file it created, then
 * closes the backend.
 */
public final class Volumes implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Volumes.class.getName());

    /**
     * One volume. Immutable: an update replaces the record.
     *
     * @param parameters CreateVolume's parameters (a StorageClass's), passed on in the volume_context as a
     *                   provisioner passes on what the node must know, such as {@code encryption: luks2}
     */
    public record Volume(String id, String name, Path file, VolumeBackend.Placement placement, long capacityBytes,
                         boolean mountAccess, Set<String> publishedNodes, Map<String, String> parameters) {

        public Volume {
            publishedNodes = Set.copyOf(publishedNodes);
            parameters = Map.copyOf(parameters);
        }

        Volume withCapacity(VolumeBackend.Placement grown, long bytes) {
            return new Volume(id, name, file, grown, bytes, mountAccess, publishedNodes, parameters);
        }

        Volume withPublishedNodes(Set<String> nodes) {
            return new Volume(id, name, file, placement, capacityBytes, mountAccess, nodes, parameters);
        }

        /** The backend's keys (where the storage is), then the parameters; {@link #create} keeps them apart. */
        public Map<String, String> volumeContext() {
            Map<String, String> context = new LinkedHashMap<>(placement.volumeContext());
            context.putAll(parameters);
            return Map.copyOf(context);
        }
    }

    private final Path dir;
    private final VolumeBackend backend;
    private final Map<String, Volume> byId = new LinkedHashMap<>();

    public Volumes(Path dir, VolumeBackend backend) throws IOException {
        // The real path: sysfs reports a loop device's backing file that way, and the loop backend compares.
        this.dir = Files.createDirectories(dir).toRealPath();
        this.backend = backend;
    }

    public VolumeBackend backend() {
        return backend;
    }

    public synchronized Optional<Volume> byId(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    public synchronized Optional<Volume> byName(String name) {
        return byId.values().stream().filter(v -> v.name().equals(name)).findFirst();
    }

    public synchronized List<Volume> all() {
        return List.copyOf(byId.values());
    }

    /**
     * Creates a sparse file of {@code bytes} and has the backend expose it.
     *
     * @throws IllegalArgumentException when a parameter names a key the backend sets (nothing is left then)
     */
    public synchronized Volume create(String name, long bytes, boolean mountAccess, Map<String, String> parameters)
            throws IOException {
        String id = "e2e-" + UUID.randomUUID();
        Path file = dir.resolve(id + ".img");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(bytes);
        }
        VolumeBackend.Placement placement;
        try {
            placement = backend.expose(id, file, bytes);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
        Volume volume = new Volume(id, name, file, placement, bytes, mountAccess, Set.of(), parameters);
        Set<String> clash = new HashSet<>(parameters.keySet());
        clash.retainAll(placement.volumeContext().keySet());
        if (!clash.isEmpty()) {
            // A parameter must not redirect the node to other storage than the one made here.
            release(volume);
            throw new IllegalArgumentException("parameters " + new TreeSet<>(clash)
                    + " are volume_context keys the " + backend.name() + " backend sets itself");
        }
        byId.put(id, volume);
        LOG.info(() -> "created volume " + id + " (\"" + name + "\", " + bytes + " bytes) on " + placement.where());
        return volume;
    }

    /**
     * Withdraws the volume from the node and deletes its file. Returns false when no such volume exists.
     *
     * @throws VolumeBackend.InUseException when the backend found it in use: the volume is kept
     */
    public synchronized boolean delete(String id) throws IOException {
        Volume volume = byId.get(id);
        if (volume == null) {
            return false;
        }
        release(volume);
        byId.remove(id);
        LOG.info(() -> "deleted volume " + id + " (" + volume.placement().where() + " withdrawn)");
        return true;
    }

    /** Grows the file to {@code bytes} and has the backend show the new size. */
    public synchronized Volume expand(String id, long bytes) throws IOException {
        Volume volume = require(id);
        try (RandomAccessFile raf = new RandomAccessFile(volume.file().toFile(), "rw")) {
            raf.setLength(bytes);
        }
        Volume grown = volume.withCapacity(backend.grow(volume.placement(), volume.file(), bytes), bytes);
        byId.put(id, grown);
        LOG.info(() -> "expanded volume " + id + " to " + bytes + " bytes");
        return grown;
    }

    public synchronized Volume publish(String id, String node) throws IOException {
        Volume volume = require(id);
        Set<String> nodes = new HashSet<>(volume.publishedNodes());
        nodes.add(node);
        Volume published = volume.withPublishedNodes(nodes);
        byId.put(id, published);
        return published;
    }

    /** @param node the node to unpublish from, or empty for every node */
    public synchronized void unpublish(String id, String node) {
        Volume volume = byId.get(id);
        if (volume == null) {
            return;
        }
        Set<String> nodes = new HashSet<>(volume.publishedNodes());
        if (node.isEmpty()) {
            nodes.clear();
        } else {
            nodes.remove(node);
        }
        byId.put(id, volume.withPublishedNodes(nodes));
    }

    /**
     * Releases every volume still registered; failures are collected so that one cannot strand the rest.
     *
     * @return one line per volume released, for the caller to report (this runs in shutdown hooks, where
     *         java.util.logging may already have been reset by its own hook)
     */
    public synchronized List<String> releaseAll() throws IOException {
        List<String> released = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (Volume volume : List.copyOf(byId.values())) {
            try {
                release(volume);
                byId.remove(volume.id());
                released.add("released volume " + volume.id() + " (" + volume.placement().where() + ", "
                        + volume.file() + ")");
            } catch (IOException | RuntimeException e) {
                failures.add(volume.id() + " on " + volume.placement().where() + ": " + e.getMessage());
            }
        }
        if (!failures.isEmpty()) {
            throw new IOException("could not release " + failures.size() + " volume(s): "
                    + String.join("; ", failures));
        }
        return released;
    }

    /** Releases every volume, then the backend (even when a volume could not be released). */
    @Override
    public void close() throws IOException {
        try {
            releaseAll();
        } finally {
            backend.close();
        }
    }

    private Volume require(String id) throws IOException {
        Volume volume = byId.get(id);
        if (volume == null) {
            throw new NoSuchFileException("no volume " + id);
        }
        return volume;
    }

    private void release(Volume volume) throws IOException {
        backend.withdraw(volume.placement(), volume.file());
        Files.deleteIfExists(volume.file());
    }
}
