package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
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
import java.util.UUID;
import java.util.logging.Logger;

/**
 * The test controller's volumes, in memory: each one a sparse file under the work directory attached to
 * a loop device. Every method is synchronized; callers that need check-then-act (create by name) lock on
 * this object around both steps. {@link #close()} detaches every loop device this registry attached and
 * deletes every file it created.
 */
public final class LoopVolumes implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(LoopVolumes.class.getName());

    /** One volume. Immutable: an update replaces the record. */
    public record Volume(String id, String name, Path file, String device, long capacityBytes,
                         boolean mountAccess, Set<String> publishedNodes) {

        public Volume {
            publishedNodes = Set.copyOf(publishedNodes);
        }

        Volume withCapacity(long bytes) {
            return new Volume(id, name, file, device, bytes, mountAccess, publishedNodes);
        }

        Volume withPublishedNodes(Set<String> nodes) {
            return new Volume(id, name, file, device, capacityBytes, mountAccess, nodes);
        }
    }

    private final Path dir;
    private final CommandRunner commands;
    private final Map<String, Volume> byId = new LinkedHashMap<>();

    public LoopVolumes(Path dir, CommandRunner commands) throws IOException {
        // The real path: sysfs reports a loop device's backing file that way, and release() compares them.
        this.dir = Files.createDirectories(dir).toRealPath();
        this.commands = commands;
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

    /** Creates a sparse file of {@code bytes} and attaches it to a free loop device. */
    public synchronized Volume create(String name, long bytes, boolean mountAccess) throws IOException {
        String id = "e2e-" + UUID.randomUUID();
        Path file = dir.resolve(id + ".img");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(bytes);
        }
        String device;
        try {
            device = commands.runChecked(Command.of("losetup", "--find", "--show", file.toString()))
                    .stdout().strip();
            if (!device.startsWith("/dev/loop")) {
                throw new IOException("losetup --find --show printed \"" + device + "\", not a loop device");
            }
        } catch (IOException e) {
            Files.deleteIfExists(file);
            throw e;
        }
        Volume volume = new Volume(id, name, file, device, bytes, mountAccess, Set.of());
        byId.put(id, volume);
        LOG.info(() -> "created volume " + id + " (\"" + name + "\", " + bytes + " bytes) on " + device);
        return volume;
    }

    /** Detaches the loop device and deletes the file. Returns false when no such volume exists. */
    public synchronized boolean delete(String id) throws IOException {
        Volume volume = byId.get(id);
        if (volume == null) {
            return false;
        }
        release(volume);
        byId.remove(id);
        LOG.info(() -> "deleted volume " + id + " (" + volume.device() + " detached)");
        return true;
    }

    /** Grows the file to {@code bytes} and tells the loop driver to re-read its size. */
    public synchronized Volume expand(String id, long bytes) throws IOException {
        Volume volume = require(id);
        try (RandomAccessFile raf = new RandomAccessFile(volume.file().toFile(), "rw")) {
            raf.setLength(bytes);
        }
        commands.runChecked(Command.of("losetup", "--set-capacity", volume.device()));
        Volume grown = volume.withCapacity(bytes);
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
                released.add("released volume " + volume.id() + " (" + volume.device() + ", " + volume.file() + ")");
            } catch (IOException | RuntimeException e) {
                failures.add(volume.id() + " on " + volume.device() + ": " + e.getMessage());
            }
        }
        if (!failures.isEmpty()) {
            throw new IOException("could not release " + failures.size() + " volume(s): "
                    + String.join("; ", failures));
        }
        return released;
    }

    @Override
    public void close() throws IOException {
        releaseAll();
    }

    private Volume require(String id) throws IOException {
        Volume volume = byId.get(id);
        if (volume == null) {
            throw new NoSuchFileException("no volume " + id);
        }
        return volume;
    }

    /**
     * Detaches the loop device, but only while it is still backed by this volume's file: a device number
     * that was somehow reused by someone else is never detached. A device still held open (a mount the
     * node plugin failed to remove) is marked autoclear by the kernel and goes away with its last user.
     */
    private void release(Volume volume) throws IOException {
        Optional<Path> backing = backingFile(volume.device());
        if (backing.isPresent() && backing.get().equals(volume.file())) {
            try {
                commands.runChecked(Command.of("losetup", "--detach", volume.device()));
            } catch (CommandException e) {
                // Already detached by its autoclear flag between our check and now: nothing left to do.
                if (backingFile(volume.device()).filter(volume.file()::equals).isPresent()) {
                    throw e;
                }
            }
        } else {
            LOG.warning(() -> volume.device() + " is no longer backed by " + volume.file() + " (backing: "
                    + backing.map(Path::toString).orElse("none") + "); not detaching it");
        }
        Files.deleteIfExists(volume.file());
    }

    /** The loop device's backing file from sysfs, without the kernel's " (deleted)" suffix. */
    static Optional<Path> backingFile(String device) throws IOException {
        Path sys = Path.of("/sys/block", Path.of(device).getFileName().toString(), "loop", "backing_file");
        try {
            String text = Files.readString(sys, StandardCharsets.UTF_8).strip();
            if (text.endsWith(" (deleted)")) {
                text = text.substring(0, text.length() - " (deleted)".length());
            }
            return text.isEmpty() ? Optional.empty() : Optional.of(Path.of(text));
        } catch (NoSuchFileException detached) {
            return Optional.empty();
        }
    }
}
