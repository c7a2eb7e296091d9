package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.transport.local.LocalTransport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Volumes as loop devices on this machine, handed to the node plugin's {@code local} transport as
 * volume_context {@code devicePath}: the host csi-sanity tier, where the kernel has no SCSI.
 */
public final class LoopBackend implements VolumeBackend {

    private static final Logger LOG = Logger.getLogger(LoopBackend.class.getName());

    private final CommandRunner commands;

    public LoopBackend(CommandRunner commands) {
        this.commands = commands;
    }

    @Override
    public String name() {
        return "loop";
    }

    @Override
    public Placement expose(String volumeId, Path file, long bytes) throws IOException {
        return placement(attach(commands, file));
    }

    /** A new loop device over {@code file}: its /dev path. */
    static String attach(CommandRunner commands, Path file) throws IOException {
        String device = commands.runChecked(Command.of("losetup", "--find", "--show", file.toString()))
                .stdout().strip();
        if (!device.startsWith("/dev/loop")) {
            throw new IOException("losetup --find --show printed \"" + device + "\", not a loop device");
        }
        return device;
    }

    @Override
    public Placement grow(Placement placement, Path file, long bytes) throws IOException {
        commands.runChecked(Command.of("losetup", "--set-capacity", placement.where()));
        return placement;
    }

    /**
     * Detaches the loop device, but only while it is still backed by this volume's file: a device number
     * that was somehow reused by someone else is never detached. A device still held open (a mount the
     * node plugin failed to remove) is marked autoclear by the kernel and goes away with its last user.
     */
    @Override
    public void withdraw(Placement placement, Path file) throws IOException {
        String device = placement.where();
        Optional<Path> backing = backingFile(device);
        if (backing.isPresent() && backing.get().equals(file)) {
            try {
                commands.runChecked(Command.of("losetup", "--detach", device));
            } catch (CommandException e) {
                // Already detached by its autoclear flag between our check and now: nothing left to do.
                if (backingFile(device).filter(file::equals).isPresent()) {
                    throw e;
                }
            }
        } else {
            LOG.warning(() -> device + " is no longer backed by " + file + " (backing: "
                    + backing.map(Path::toString).orElse("none") + "); not detaching it");
        }
    }

    static Placement placement(String device) {
        return new Placement(device, Map.of(LocalTransport.DEVICE_PATH, device));
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
