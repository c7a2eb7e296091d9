package dev.blocknode.e2e.controller;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.CapacityRange;
import dev.blocknode.csi.v1.ControllerExpandVolumeRequest;
import dev.blocknode.csi.v1.ControllerExpandVolumeResponse;
import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.ControllerPublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeRequest;
import dev.blocknode.csi.v1.CreateVolumeRequest;
import dev.blocknode.csi.v1.DeleteVolumeRequest;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.blocknode.csi.v1.Volume;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.transport.local.LocalTransport;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The test controller's request validation, over a real Unix socket. Tests tagged "host" attach real
 * loop devices (root only); every device and file they create is released in {@link #stop()}, which
 * runs whether the test passed or not, and is then checked to be gone.
 */
class TestControllerServiceHostTest {

    private static final String NODE = "node-1";
    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private Volumes volumes;
    private UnixSocketServer server;
    private CsiClient client;
    private ControllerGrpc.ControllerBlockingStub controller;

    @BeforeEach
    void start() throws IOException {
        volumes = new Volumes(dir.resolve("work"), new LoopBackend(new ProcessCommandRunner()));
        server = UnixSocketServer.start(dir.resolve("c.sock"), PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(new TestControllerService(volumes, NODE)), List.of());
        client = new CsiClient(dir.resolve("c.sock"));
        // One deadline for the whole test: nothing here should take more than a few seconds.
        controller = client.controller().withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws IOException {
        List<Throwable> problems = new ArrayList<>();
        for (AutoCloseable step : new AutoCloseable[]{client::close, server::close, volumes::close}) {
            try {
                step.close();
            } catch (Exception e) {
                problems.add(e);
            }
        }
        assertEquals(List.of(), loopDevicesBackedUnder(dir), "loop devices left attached");
        assertEquals(List.of(), problems);
    }

    // ------------------------------------------------------------------------------- validation only

    @Test
    void createVolumeNeedsANameAndCapabilities() {
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.createVolume(CreateVolumeRequest.newBuilder()
                .addVolumeCapabilities(mount("ext4")).build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.createVolume(CreateVolumeRequest.newBuilder()
                .setName("v").build()));
        assertEquals(List.of(), volumes.all());
    }

    @Test
    void createVolumeRefusesCapabilitiesItCannotServe() {
        VolumeCapability noAccessType = VolumeCapability.newBuilder()
                .setAccessMode(mode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
        VolumeCapability noAccessMode = VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance()).build();
        VolumeCapability multiNode = block().toBuilder()
                .setAccessMode(mode(VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER)).build();
        for (VolumeCapability capability : List.of(noAccessType, noAccessMode, multiNode, mount("btrfs"))) {
            StatusRuntimeException e = assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.createVolume(
                    CreateVolumeRequest.newBuilder().setName("v").addVolumeCapabilities(block())
                            .addVolumeCapabilities(capability).build()));
            assertTrue(e.getStatus().getDescription().startsWith("volume_capabilities: "), e.getMessage());
        }
        assertEquals(List.of(), volumes.all());
    }

    @Test
    void createVolumeRefusesAnImpossibleCapacityRange() {
        assertCode(Status.Code.OUT_OF_RANGE, () -> controller.createVolume(create("v", 2 * MIB, MIB, block())));
        // No whole MiB fits between 1 MiB + 1 and 2 MiB - 1.
        assertCode(Status.Code.OUT_OF_RANGE, () -> controller.createVolume(
                create("v", MIB + 1, 2 * MIB - 1, block())));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.createVolume(create("v", -1, 0, block())));
        assertEquals(List.of(), volumes.all());
    }

    @Test
    void publishChecksEveryFieldBeforeLookingTheVolumeUp() {
        ControllerPublishVolumeRequest full = ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId("no-such-volume").setNodeId(NODE).setVolumeCapability(block()).build();
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.controllerPublishVolume(
                full.toBuilder().clearVolumeId().build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.controllerPublishVolume(
                full.toBuilder().clearNodeId().build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.controllerPublishVolume(
                full.toBuilder().clearVolumeCapability().build()));
        assertCode(Status.Code.NOT_FOUND, () -> controller.controllerPublishVolume(full));
    }

    @Test
    void deleteAndUnpublishOfAnUnknownVolumeSucceedButNeedAnId() {
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("no-such-volume").build());
        controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId("no-such-volume").setNodeId("no-such-node").build());
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.deleteVolume(DeleteVolumeRequest.getDefaultInstance()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.controllerUnpublishVolume(
                ControllerUnpublishVolumeRequest.newBuilder().setNodeId(NODE).build()));
    }

    @Test
    void validateAndExpandNeedTheirFieldsAndAKnownVolume() {
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().addVolumeCapabilities(block()).build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId("no-such-volume").build()));
        assertCode(Status.Code.NOT_FOUND, () -> controller.validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId("no-such-volume")
                        .addVolumeCapabilities(block()).build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller.controllerExpandVolume(
                ControllerExpandVolumeRequest.newBuilder().setVolumeId("no-such-volume").build()));
        assertCode(Status.Code.NOT_FOUND, () -> controller.controllerExpandVolume(
                ControllerExpandVolumeRequest.newBuilder().setVolumeId("no-such-volume")
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB)).build()));
    }

    // --------------------------------------------------------------------------- with loop devices

    @Test
    @Tag("host")
    void createIsIdempotentByNameAndRefusesTheSameNameWithAnotherSize() throws IOException {
        Volume first = controller.createVolume(create("v", 10 * MIB + 1, 0, mount("ext4"))).getVolume();
        assertEquals(11 * MIB, first.getCapacityBytes(), "rounded up to whole MiB");
        String device = first.getVolumeContextOrThrow(LocalTransport.DEVICE_PATH);
        assertTrue(device.startsWith("/dev/loop"), device);
        assertEquals(Optional.of(volumes.byId(first.getVolumeId()).orElseThrow().file()),
                LoopBackend.backingFile(device));

        Volume again = controller.createVolume(create("v", 10 * MIB, 0, mount("ext4"))).getVolume();
        assertEquals(first, again);
        assertCode(Status.Code.ALREADY_EXISTS, () -> controller.createVolume(
                create("v", 20 * MIB, 20 * MIB, mount("ext4"))));
        assertEquals(1, volumes.all().size());
    }

    @Test
    @Tag("host")
    void publishKnowsOnlyItsNodeAndDeleteWaitsForUnpublish() throws IOException {
        Volume volume = controller.createVolume(create("v", 8 * MIB, 0, block())).getVolume();
        Path file = volumes.byId(volume.getVolumeId()).orElseThrow().file();
        ControllerPublishVolumeRequest publish = ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(volume.getVolumeId()).setNodeId("other-node").setVolumeCapability(block()).build();
        assertCode(Status.Code.NOT_FOUND, () -> controller.controllerPublishVolume(publish));

        controller.controllerPublishVolume(publish.toBuilder().setNodeId(NODE).build());
        controller.controllerPublishVolume(publish.toBuilder().setNodeId(NODE).build());
        DeleteVolumeRequest delete = DeleteVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build();
        assertCode(Status.Code.FAILED_PRECONDITION, () -> controller.deleteVolume(delete));

        controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volume.getVolumeId()).setNodeId(NODE).build());
        controller.deleteVolume(delete);
        assertEquals(Optional.empty(), LoopBackend.backingFile(volume.getVolumeContextOrThrow(LocalTransport.DEVICE_PATH))
                .filter(file::equals));
        assertFalse(Files.exists(file));
        controller.deleteVolume(delete);
    }

    @Test
    @Tag("host")
    void expandGrowsTheLoopDeviceAndAsksTheNodeToGrowFilesystemsOnly() throws IOException {
        Volume volume = controller.createVolume(create("v", 8 * MIB, 0, mount(""))).getVolume();
        String device = volume.getVolumeContextOrThrow(LocalTransport.DEVICE_PATH);
        ControllerExpandVolumeRequest expand = ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(volume.getVolumeId())
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB)).build();

        ControllerExpandVolumeResponse grown = controller.controllerExpandVolume(expand);
        assertEquals(16 * MIB, grown.getCapacityBytes());
        assertTrue(grown.getNodeExpansionRequired(), "mount volume: the node grows the filesystem");
        assertEquals(16 * MIB, deviceBytes(device));

        ControllerExpandVolumeResponse asBlock = controller.controllerExpandVolume(
                expand.toBuilder().setVolumeCapability(block()).build());
        assertEquals(16 * MIB, asBlock.getCapacityBytes(), "no shrinking, no change");
        assertFalse(asBlock.getNodeExpansionRequired());
        assertCode(Status.Code.OUT_OF_RANGE, () -> controller.controllerExpandVolume(expand.toBuilder()
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(4 * MIB).setLimitBytes(4 * MIB))
                .build()));
    }

    @Test
    @Tag("host")
    void closeReleasesEveryVolume() throws IOException {
        Volume a = controller.createVolume(create("a", 4 * MIB, 0, block())).getVolume();
        Volume b = controller.createVolume(create("b", 4 * MIB, 0, mount("xfs"))).getVolume();
        assertEquals(2, loopDevicesBackedUnder(dir).size());

        List<String> released = volumes.releaseAll();

        assertEquals(2, released.size());
        assertEquals(List.of(), loopDevicesBackedUnder(dir));
        assertEquals(List.of(), volumes.all());
        for (Volume volume : List.of(a, b)) {
            assertFalse(Files.exists(dir.resolve("work").resolve(volume.getVolumeId() + ".img")));
        }
    }

    // ------------------------------------------------------------------------------------- helpers

    private static StatusRuntimeException assertCode(Status.Code code, Executable call) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
        assertEquals(code, e.getStatus().getCode(), e.getMessage());
        return e;
    }

    private static CreateVolumeRequest create(String name, long required, long limit, VolumeCapability capability) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(required).setLimitBytes(limit))
                .addVolumeCapabilities(capability)
                .build();
    }

    private static VolumeCapability.AccessMode mode(VolumeCapability.AccessMode.Mode mode) {
        return VolumeCapability.AccessMode.newBuilder().setMode(mode).build();
    }

    private static VolumeCapability block() {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(mode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    private static VolumeCapability mount(String fsType) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType))
                .setAccessMode(mode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    private static long deviceBytes(String device) throws IOException {
        Path size = Path.of("/sys/block", Path.of(device).getFileName().toString(), "size");
        return Long.parseLong(Files.readString(size).strip()) * 512;
    }

    /** Every loop device whose backing file lies under {@code root}, from sysfs. */
    private static List<String> loopDevicesBackedUnder(Path root) throws IOException {
        Path real = root.toRealPath();
        List<String> found = new ArrayList<>();
        try (Stream<Path> devices = Files.list(Path.of("/sys/block"))) {
            for (Path sys : devices.filter(p -> p.getFileName().toString().startsWith("loop")).toList()) {
                String device = "/dev/" + sys.getFileName();
                LoopBackend.backingFile(device).filter(f -> f.startsWith(real)).ifPresent(f -> found.add(device));
            }
        }
        return found;
    }
}
