package dev.blocknode.transport.nvme;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.StagedVolumes;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Whether an NVMe controller may be deleted. Unlike an iSCSI session, which carries only the LUNs scanned in
 * for volumes, a controller shows every namespace of its subsystem, used or not, so sysfs alone cannot say
 * which are volumes. Two sources decide together: the staging records ({@link StagedVolumes}: every volume
 * staged or being staged through the same subsystem, portal and host keeps it, including one whose attach
 * runs right now and one published to a pod in block mode, which holds no exclusive claim), and the kernel
 * (a namespace disk of the controller that something holds exclusively, a mount or a map made by hand, keeps
 * it too).
 */
final class ControllerUsers {

    private final StagedVolumes staged;
    private final BlockDevices blockDevices;
    private final HostPaths paths;
    private final NvmeControllers controllers;
    private final Path hostConfig;

    ControllerUsers(StagedVolumes staged, BlockDevices blockDevices, HostPaths paths, NvmeControllers controllers,
                    Path hostConfig) {
        this.staged = staged;
        this.blockDevices = blockDevices;
        this.paths = paths;
        this.controllers = controllers;
        this.hostConfig = hostConfig;
    }

    /**
     * What keeps {@code controller} (reached as {@code key}); empty when nothing does.
     *
     * @param self the record of the volume being torn down, which does not count
     */
    Optional<String> holding(NvmeControllers.Controller controller, ControllerKey key,
                             Predicate<StagedVolumes.StagedVolume> self) throws IOException {
        Set<String> users = new LinkedHashSet<>();
        for (StagedVolumes.StagedVolume volume : staged.of(NvmeTcpTransport.NAME)) {
            if (!self.test(volume) && uses(volume, key)) {
                users.add("volume " + volume.volumeId());
            }
        }
        for (String record : staged.unreadable()) {
            users.add("the volume of the unreadable staging record " + record + " (which may use it)");
        }
        Set<String> disks = new LinkedHashSet<>();
        for (NvmeControllers.NamespacePath path : controllers.namespaces(controller)) {
            disks.add(path.disk());
        }
        for (String disk : disks) {
            Path node = paths.dev().resolve(disk);
            if (Files.exists(node) && blockDevices.isClaimed(node)) {
                users.add(disk + " (mounted or held on this node)");
            }
        }
        return users.isEmpty() ? Optional.empty() : Optional.of(String.join(", ", users));
    }

    /**
     * Whether a recorded volume reaches the subsystem through this portal as this host: from what its attach
     * recorded, or, for an attach under way (nothing recorded yet), from the contexts it was asked with.
     */
    private boolean uses(StagedVolumes.StagedVolume volume, ControllerKey key) throws IOException {
        Optional<Reached> reached = Reached.of(volume.attachment());
        if (reached.isEmpty()) {
            try {
                NvmeVolumeSpec spec = NvmeVolumeSpec.from(volume.request());
                HostIdentity host = spec.host(HostIdentity.configured(hostConfig));
                reached = Optional.of(new Reached(spec.subsystemNqn(), spec.portals(),
                        host.hostNqn()));
            } catch (VolumeException unusable) {
                return false; // a request that cannot be attached never connected anything
            }
        }
        return reached.get().keys().contains(key);
    }
}
