package dev.blocknode.csi;

import dev.blocknode.ControllerPlugin;
import dev.blocknode.config.FlagParser;
import dev.blocknode.config.PluginConfig;
import dev.blocknode.config.PluginMode;
import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.ControllerGetCapabilitiesRequest;
import dev.blocknode.csi.v1.ControllerPublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerPublishVolumeResponse;
import dev.blocknode.csi.v1.ControllerServiceCapability;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeRequest;
import dev.blocknode.csi.v1.CreateVolumeRequest;
import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.NodeGetInfoRequest;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.logging.LogCapture;
import dev.blocknode.testing.HostileInput;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --mode controller} over its real socket: the Identity and Controller services the external-attacher
 * calls, publish and unpublish checked as the spec asks and touching nothing, and no Node service.
 */
@Tag("host")
class ControllerModeHostTest {

    @TempDir
    Path dir;

    private ControllerPlugin plugin;
    private CsiClient client;

    @BeforeEach
    void start() throws Exception {
        PluginConfig config = FlagParser.parse(new String[]{"--mode", "controller", "--endpoint",
                "unix://" + dir.resolve("csi.sock"), "--state-dir", dir.resolve("never-made").toString(),
                "--log-format", "text"});
        assertEquals(PluginMode.CONTROLLER, config.mode());
        plugin = ControllerPlugin.start(config);
        client = new CsiClient(config.socket());
    }

    @AfterEach
    void stop() {
        client.close();
        plugin.close();
        assertFalse(Files.exists(dir.resolve("never-made")), "the controller side keeps no state");
    }

    private static VolumeCapability mountCapability(VolumeCapability.AccessMode.Mode mode) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
    }

    private static ControllerPublishVolumeRequest.Builder publish() {
        return ControllerPublishVolumeRequest.newBuilder().setVolumeId("pv-1").setNodeId("node-a")
                .setVolumeCapability(mountCapability(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .putVolumeContext("transport", "iscsi").putSecrets("password", "hunter2");
    }

    private Status.Code publishCode(Consumer<ControllerPublishVolumeRequest.Builder> change) {
        ControllerPublishVolumeRequest.Builder request = publish();
        change.accept(request);
        return assertThrows(StatusRuntimeException.class,
                () -> client.controller().controllerPublishVolume(request.build())).getStatus().getCode();
    }

    @Test
    void identitySaysControllerServiceAndTheControllerPublishesAndUnpublishes() {
        assertEquals("block.csi.blocknode.dev",
                client.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
        assertTrue(client.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
        List<PluginCapability> capabilities = client.identity()
                .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
        assertTrue(capabilities.stream().anyMatch(c -> c.getService().getType()
                == PluginCapability.Service.Type.CONTROLLER_SERVICE), capabilities.toString());
        assertEquals(List.of(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME), client.controller()
                .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList().stream().map(c -> c.getRpc().getType()).toList());

        for (int i = 0; i < 2; i++) { // idempotent: the same call twice is OK twice
            ControllerPublishVolumeResponse published = client.controller().controllerPublishVolume(publish().build());
            assertTrue(published.getPublishContextMap().isEmpty(), "the node needs nothing the PV does not hold");
            client.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                    .setVolumeId("pv-1").setNodeId("node-a").build());
        }
        client.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId("pv-1").build()); // no node_id: from every node
    }

    @Test
    void publishRefusesWhatTheSpecCallsInvalid() {
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.clearVolumeId()));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.clearNodeId()));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.setNodeId("n".repeat(257))));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.setNodeId("node\nforged log line")));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.clearVolumeCapability()));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.setVolumeCapability(
                mountCapability(VolumeCapability.AccessMode.Mode.UNKNOWN))));
        assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.setVolumeId("v".repeat(129))));
        StatusRuntimeException unpublish = assertThrows(StatusRuntimeException.class, () -> client.controller()
                .controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setNodeId("node-a").build()));
        assertEquals(Status.Code.INVALID_ARGUMENT, unpublish.getStatus().getCode());
    }

    private static VolumeCapability mountCapability(String fsType, String... flags) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType).addAllMountFlags(List.of(flags)))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
    }

    private Status.Code validateCode(VolumeCapability capability) {
        try {
            ValidateVolumeCapabilitiesResponse answer = client.controller().validateVolumeCapabilities(
                    ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId("pv-1")
                            .addVolumeCapabilities(capability).putVolumeContext("transport", "iscsi").build());
            assertEquals(List.of(capability), answer.getConfirmed().getVolumeCapabilitiesList(),
                    "a capability the node takes is confirmed");
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    /**
     * The controller refuses what NodeStageVolume refuses, by the same validator (an fs_type
     * the node does not mount, a mount option the filesystem does not take), and accepts what the node accepts.
     */
    @Test
    void publishAndValidateRefuseWhatTheNodeRefusesAndAcceptWhatItAccepts() {
        for (VolumeCapability refused : List.of(mountCapability("ext4;rm"), mountCapability("ext4", "foo=bar"),
                mountCapability("xfs", "logbufs=99"), mountCapability("ext4", "data=bogus"),
                mountCapability("ext4", "nosuid,x=y"), mountCapability("", "data=journal", "logbufs=4"))) {
            assertEquals(Status.Code.INVALID_ARGUMENT, publishCode(r -> r.setVolumeCapability(refused)),
                    "ControllerPublishVolume " + refused);
            assertEquals(Status.Code.INVALID_ARGUMENT, validateCode(refused), "ValidateVolumeCapabilities " + refused);
        }
        String selinux = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";
        for (VolumeCapability accepted : List.of(mountCapability("ext4"), mountCapability(""),
                mountCapability("xfs", "logbufs=8", "nouuid"), mountCapability("ext4", "data=journal,noatime"),
                mountCapability("ext4", "nosuid", selinux), mountCapability("", "logbsize=256k"),
                VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                        .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                                .setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER)).build())) {
            client.controller().controllerPublishVolume(publish().setVolumeCapability(accepted).build());
            assertEquals(Status.Code.OK, validateCode(accepted), "ValidateVolumeCapabilities " + accepted);
        }
        StatusRuntimeException none = assertThrows(StatusRuntimeException.class, () -> client.controller()
                .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId("pv-1").build()));
        assertEquals(Status.Code.INVALID_ARGUMENT, none.getStatus().getCode());
    }

    /**
     * What the external-attacher relays comes from PVs and VolumeAttachments anyone with those rights writes:
     * hostile fields in any of them get INVALID_ARGUMENT (or OK when they are merely unusual), a short escaped
     * message, no forged or SEVERE log line, and the server stays up.
     */
    @Test
    void hostileRequestsGetInvalidArgumentAndAnEscapedMessage() {
        HostileInput hostile = new HostileInput(20261125);
        Path root = dir.resolve("kubelet");
        Map<Status.Code, Integer> codes = new EnumMap<>(Status.Code.class);
        try (LogCapture log = LogCapture.installed()) {
            for (int i = 0; i < 300; i++) {
                Status.Code code = Status.Code.OK;
                try {
                    if (hostile.nextBoolean()) {
                        client.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setNodeId(hostile.nodeId())
                                .setVolumeCapability(hostile.capability()).setReadonly(hostile.nextBoolean())
                                .putAllVolumeContext(hostile.context(root.resolve("dev")))
                                .putAllSecrets(hostile.secrets()).build());
                    } else {
                        client.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setNodeId(hostile.nodeId())
                                .putAllSecrets(hostile.secrets()).build());
                    }
                } catch (StatusRuntimeException e) {
                    code = e.getStatus().getCode();
                    assertEquals(Status.Code.INVALID_ARGUMENT, code, "request " + i + ": " + e.getStatus());
                    HostileInput.assertShortAndEscaped(e.getStatus().getDescription());
                }
                codes.merge(code, 1, Integer::sum);
            }
            HostileInput.assertNoForgedOrSevereLine(log.written());
        }
        assertTrue(codes.getOrDefault(Status.Code.INVALID_ARGUMENT, 0) > 150, codes.toString());
        assertTrue(client.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue(), "still up");
    }

    @Test
    void nothingButPublishingIsServed() {
        StatusRuntimeException create = assertThrows(StatusRuntimeException.class, () -> client.controller()
                .createVolume(CreateVolumeRequest.newBuilder().setName("v").build()));
        assertEquals(Status.Code.UNIMPLEMENTED, create.getStatus().getCode());
        StatusRuntimeException node = assertThrows(StatusRuntimeException.class,
                () -> client.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()));
        assertEquals(Status.Code.UNIMPLEMENTED, node.getStatus().getCode());
    }
}
