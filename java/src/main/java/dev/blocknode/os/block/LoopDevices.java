package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/** Loop devices through losetup, and what sysfs says about them. */
public final class LoopDevices {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final HostPaths host;
    private final CommandRunner commands;

    public LoopDevices(HostPaths host, CommandRunner commands) {
        this.host = host;
        this.commands = commands;
    }

    /**
     * The first unused loop device (the kernel creates its node if needed), not yet bound to anything: a
     * caller can record its name before binding it, so that a crash in between cannot leak it unnamed.
     * Another process may take it first; then {@link #attachReadOnly} fails and the caller tries again.
     */
    public Path findUnused() throws CommandException {
        return Path.of(commands.runChecked(Command.of("losetup", "--find").withTimeout(TIMEOUT)).stdout().strip());
    }

    /** Binds the unused loop device {@code loop}, read-only, over {@code backing} (a file or a block device). */
    public void attachReadOnly(Path loop, Path backing) throws CommandException {
        commands.runChecked(Command.of("losetup", "--read-only", loop.toString(), backing.toString())
                .withTimeout(TIMEOUT));
    }

    public void detach(Path loopDevice) throws CommandException {
        commands.runChecked(Command.of("losetup", "--detach", loopDevice.toString()).withTimeout(TIMEOUT));
    }

    /** What the loop device is backed by, or empty when it is not (or no longer) a bound loop device. */
    public Optional<Path> backingFile(DeviceNumber loop) throws IOException {
        try {
            String backing = Files.readString(host.sysBlockDevice(loop).resolve("loop/backing_file"),
                    StandardCharsets.UTF_8).strip();
            return backing.isEmpty() ? Optional.empty() : Optional.of(Path.of(backing));
        } catch (NoSuchFileException notLoop) {
            return Optional.empty();
        }
    }
}
