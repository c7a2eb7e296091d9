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

    /** A new read-only loop device over {@code backing} (a file or another block device). */
    public Path attachReadOnly(Path backing) throws CommandException {
        String device = commands.runChecked(Command.of("losetup", "--find", "--show", "--read-only",
                backing.toString()).withTimeout(TIMEOUT)).stdout().strip();
        return Path.of(device);
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
