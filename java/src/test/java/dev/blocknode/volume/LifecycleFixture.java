package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.testing.machine.FakeMachine;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The lifecycle wired as Plugin wires it, over fakes only: an in-memory machine (tree, mounts, descriptors),
 * a fabricated sysfs with the volumes' devices, scripted blkid/mkfs, a scripted transport, and a real
 * RecordStore in a temp dir. No root and no kernel mounts.
 */
final class LifecycleFixture {

    static final String VOLUME = "vol-1";
    static final String OTHER_VOLUME = "vol-2";
    static final VolumeFences.Settings FENCING = VolumeFences.Settings.of("node-a", java.time.Duration.ofSeconds(10));

    final FakeMachine machine = new FakeMachine();
    final FakeSysfs sysfs;
    final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    final RecordingBlockDevices block;
    final ScriptedTransport transport = new ScriptedTransport();
    final RecordStore store;
    final Path root;
    final Host host;
    private final Path stateDir;
    final NodeVolumes volumes;
    /** The device of {@link #VOLUME} and of {@link #OTHER_VOLUME}. */
    final Attachment device;
    final Attachment otherDevice;

    LifecycleFixture(Path temp) throws IOException {
        this(temp, VolumeLimit.Settings.NONE);
    }

    /** The fixture with a volume limit (a cap, and a fake count of the maps outside blocknode). */
    LifecycleFixture(Path temp, VolumeLimit.Settings limit) throws IOException {
        this(temp, limit, true);
    }

    /** The fixture with a volume limit, and with the preen of ext4 before a mount on or off (--fsck). */
    LifecycleFixture(Path temp, VolumeLimit.Settings limit, boolean fsckOnNode) throws IOException {
        sysfs = new FakeSysfs(temp);
        block = new RecordingBlockDevices(sysfs.paths());
        device = attachable("vdb", new DeviceNumber(254, 16));
        otherDevice = attachable("vdc", new DeviceNumber(254, 32));
        host = machine.host(sysfs.paths(), commands, block);
        root = Files.createDirectories(temp.resolve("kubelet")).toRealPath();
        stateDir = temp.resolve("state");
        store = new RecordStore(stateDir);
        volumes = new NodeVolumes(host, new KubeletPaths(root, ConfinedDirectory.Resolution.OPENAT2, host.files()),
                store, new Transports(List.of(transport)), new FilesystemSettings(FilesystemType.EXT4, fsckOnNode),
                FENCING, limit);
    }

    /** The node's volumes as a restarted plugin has them: the state dir read again, the machine as it is. */
    NodeVolumes restarted() throws IOException {
        return new NodeVolumes(host, new KubeletPaths(root, ConfinedDirectory.Resolution.OPENAT2, host.files()),
                new RecordStore(stateDir), new Transports(List.of(transport)), FilesystemType.EXT4, FENCING);
    }

    /** The node's volumes as a plugin started in another boot of the kernel ({@code bootId}) has them. */
    NodeVolumes inBoot(String bootId) throws IOException {
        return new NodeVolumes(host, new KubeletPaths(root, ConfinedDirectory.Resolution.OPENAT2, host.files()),
                new RecordStore(stateDir, bootId), new Transports(List.of(transport)), FilesystemType.EXT4, FENCING);
    }

    /** Where the record file of {@code volumeId} is (the SHA-256 of its id). */
    Path recordFile(String volumeId) {
        try {
            return stateDir.resolve("volumes").resolve(java.util.HexFormat.of().formatHex(
                    java.security.MessageDigest.getInstance("SHA-256").digest(
                            volumeId.getBytes(java.nio.charset.StandardCharsets.UTF_8))) + ".pb");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private Attachment attachable(String name, DeviceNumber number) throws IOException {
        Path node = sysfs.addBlockDevice(name, number);
        machine.blockDevice(node, number);
        block.claimed(node, false).sized(node, 1L << 30);
        Attachment attachment = new Attachment(ScriptedTransport.NAME, node, number, "", Map.of());
        transport.device(name, attachment);
        return attachment;
    }

    Path staging(String volumeId) {
        return root.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/" + volumeId + "/globalmount");
    }

    Path target(String pod, String volumeId) {
        return root.resolve("pods/" + pod + "/volumes/kubernetes.io~csi/" + volumeId + "/mount");
    }

    /** kubelet's publish path for a raw block volume: the pod's UID is its last element. */
    Path blockTarget(String pod, String volumeId) {
        return root.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + volumeId + "/" + pod);
    }

    /** kubelet's directory of a pod (made when it admits the pod, removed once the pod is gone). */
    Path podDirectory(String pod) {
        return root.resolve("pods/" + pod);
    }

    static VolumeCapability filesystem(AccessMode mode, String... flags) {
        return new VolumeCapability(AccessType.Mount.parsed("ext4", List.of(flags)), mode);
    }

    static VolumeCapability filesystem() {
        return filesystem(AccessMode.SINGLE_NODE_WRITER);
    }

    static VolumeCapability block() {
        return new VolumeCapability(new AccessType.Block(), AccessMode.SINGLE_NODE_WRITER);
    }

    Requests.Stage stageRequest(String volumeId, Attachment on, VolumeCapability capability) {
        return new Requests.Stage(volumeId, staging(volumeId).toString(), capability,
                Map.of(ScriptedTransport.DEVICE_KEY, on.device().getFileName().toString()), Map.of(), Secrets.NONE);
    }

    /** {@link #stageRequest} with more volume_context keys. */
    Requests.Stage stageRequest(String volumeId, Attachment on, VolumeCapability capability,
                                Map<String, String> moreContext) {
        Map<String, String> context = new java.util.HashMap<>(moreContext);
        context.put(ScriptedTransport.DEVICE_KEY, on.device().getFileName().toString());
        return new Requests.Stage(volumeId, staging(volumeId).toString(), capability, context, Map.of(),
                Secrets.NONE);
    }

    void stage(String volumeId, Attachment on, VolumeCapability capability) throws VolumeException {
        volumes.stage(stageRequest(volumeId, on, capability));
    }

    /** blkid finds nothing on {@code on} (its head is zeros), and mkfs.ext4 is to run on it. */
    void expectBlankFormatted(Attachment on) {
        expectProbe(on).returns(2, "", "");
        expectFormat(on);
    }

    ScriptedCommandRunner.Expectation expectProbe(Attachment on) {
        return commands.expect("blkid", "-p", "-o", "export", on.device().toString());
    }

    /** e2fsck -p of the ext4 filesystem on {@code on}, before its mount. */
    ScriptedCommandRunner.Expectation expectPreen(Attachment on) {
        return commands.expect(dev.blocknode.volume.filesystem.Ext4Preen.command(on.device()).argv()
                .toArray(String[]::new));
    }

    ScriptedCommandRunner.Expectation expectFormat(Attachment on) {
        return commands.expect(FilesystemType.EXT4.format(on.device()).argv().toArray(String[]::new));
    }

    /** {@code volumeId} staged as an ext4 filesystem on {@code on}, as a first stage of a blank device leaves it. */
    void staged(String volumeId, Attachment on) throws VolumeException {
        expectBlankFormatted(on);
        stage(volumeId, on, filesystem());
        commands.assertAllConsumed();
    }

    void publish(String volumeId, Path target, VolumeCapability capability, boolean readonly) throws VolumeException {
        volumes.publish(new Requests.Publish(volumeId, staging(volumeId).toString(), target.toString(), capability,
                readonly));
    }

    /**
     * {@link #VOLUME} staged as ext4 on {@link #device} and published read-write for pod-a: where the tests of
     * what a publication allows start. Returns the target.
     */
    Path stagedAndPublished() throws VolumeException {
        staged(VOLUME, device);
        Path target = target("pod-a", VOLUME);
        publish(VOLUME, target, filesystem(), false);
        return target;
    }

    void unpublish(String volumeId, Path target) throws VolumeException {
        volumes.unpublish(new Requests.Unpublish(volumeId, target.toString()));
    }

    Optional<StagingRecord> record(String volumeId) {
        try {
            return store.load(volumeId);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    StagePhase phase(String volumeId) {
        return record(volumeId).orElseThrow(() -> new AssertionError("no record of " + volumeId)).getPhase();
    }

    /** What every test ends with: each scripted command ran, and no descriptor was left open. */
    void assertClean() {
        commands.assertAllConsumed();
        assertEquals(0, machine.openDescriptors(), "descriptors left open");
    }

    /** What mkfs.ext4 leaves where the probe looks: a superblock's magic at 0x438 (the fake device is a file). */
    static void writeSuperblock(Path device) throws IOException {
        try (java.io.RandomAccessFile out = new java.io.RandomAccessFile(device.toFile(), "rw")) {
            out.seek(0x438);
            out.write(new byte[]{0x53, (byte) 0xef});
        }
    }

    static void assertHeadIsZero(Path device, String why) throws IOException {
        byte[] head = java.nio.file.Files.readAllBytes(device);
        org.junit.jupiter.api.Assertions.assertTrue(head.length >= 0x43a, why + ": the head was written");
        for (byte b : head) {
            assertEquals(0, b, why);
        }
    }
}
