package dev.blocknode.volume;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.HostCleanup;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a refused stage does to the transport's attach, seen through a transport that attaches a real loop
 * device and records what it is asked to undo (a SAN transport's attach changes the node; its abandon is
 * unit-tested with scripted fakes in transport/). A refusal after the attach undoes this attempt's attach
 * and leaves no record; a refusal of a volume that was already staged undoes nothing.
 */
@Tag("host")
class RefusedStageUndoesItsAttachHostTest {

    private static final long SIZE = 64L << 20;
    private static final Map<String, String> CONTEXT = Map.of("lun", "7");

    /** Attaches the loop device; records the requests it is asked to abandon and the attachments to detach. */
    private static final class RecordingTransport implements Transport {
        private final LoopDevice loop;
        private final List<AttachRequest> abandoned = new ArrayList<>();
        private final List<Attachment> detached = new ArrayList<>();
        private boolean abandonFails;

        RecordingTransport(LoopDevice loop) {
            this.loop = loop;
        }

        @Override
        public String name() {
            return "san";
        }

        @Override
        public Set<String> identifyingKeys() {
            return Set.of("lun");
        }

        @Override
        public AttachPlan validate(AttachRequest request) {
            return () -> request;
        }

        @Override
        public Attachment attach(AttachPlan plan) throws VolumeException {
            try {
                return new Attachment(name(), loop.device(), Host.real().mounter().stat(loop.device()).rdev(), "",
                        Map.of("session", "1"));
            } catch (IOException e) {
                throw VolumeException.internal("cannot stat " + loop.device(), e);
            }
        }

        @Override
        public void detach(Attachment attachment) {
            detached.add(attachment);
        }

        @Override
        public void abandon(AttachRequest request) throws VolumeException {
            if (abandonFails) {
                throw VolumeException.internal("the session of lun 7 cannot be inspected", null);
            }
            abandoned.add(request);
        }
    }

    private Path dir;
    private LoopDevice loop;
    private RecordingTransport transport;
    private RecordStore store;
    private NodeVolumes volumes;
    private Path staging;

    @BeforeEach
    void start() throws IOException {
        NativeLibrary.load();
        dir = Files.createTempDirectory(Path.of("/tmp"), "bn-refused-");
        loop = LoopDevice.create(dir, "lun", SIZE);
        new ProcessCommandRunner().runChecked(Command.of("mkfs.ext4", "-q", loop.device().toString()));
        transport = new RecordingTransport(loop);
        store = new RecordStore(dir.resolve("state"), "0123456789abcdef0123456789abcdef");
        Path root = dir.resolve("kubelet");
        volumes = new NodeVolumes(Host.real(), new KubeletPaths(root), store,
                new Transports(List.of(transport)), FilesystemType.EXT4,
                VolumeFences.Settings.of("test-node", java.time.Duration.ofSeconds(10)));
        staging = Files.createDirectories(root.resolve("plugins/kubernetes.io/csi/san/vol/globalmount"));
    }

    @AfterEach
    void cleanUp() throws IOException {
        List<Path> leftMounts = HostCleanup.unmountAllUnder(dir, Host.real().mounter());
        HostCleanup.closeLoopsAndDelete(List.of(loop), dir);
        assertEquals(List.of(), leftMounts, "the test left mounts behind (now removed)");
    }

    @Test
    void aRefusalAfterTheAttachUndoesItAndTheCorrectedRetryStages() throws Exception {
        VolumeException refused = assertThrows(VolumeException.class, () -> volumes.stage(stage("xfs")));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome(), refused.getMessage());
        assertEquals(List.of(new AttachRequest("vol", CONTEXT, Map.of(), Secrets.NONE)), transport.abandoned,
                "the refused attempt's attach is undone, with its own contexts");
        assertEquals(Optional.empty(), store.load("vol"));

        volumes.stage(stage("ext4"));
        assertEquals(StagePhase.STAGED, store.load("vol").orElseThrow().getPhase());
        volumes.unstage(new Requests.Unstage("vol", staging.toString()));
        assertEquals(1, transport.abandoned.size(), "a successful stage abandons nothing");
        assertEquals(1, transport.detached.size(), "unstage detaches");
        assertEquals(Optional.empty(), store.load("vol"));
    }

    @Test
    void aFailedUndoKeepsAnAttachingRecordThatBlocksNoRetry() throws Exception {
        transport.abandonFails = true;
        VolumeException refused = assertThrows(VolumeException.class, () -> volumes.stage(stage("xfs")));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome(),
                "the caller still learns why the stage was refused");
        assertEquals(1, refused.getSuppressed().length, "and that the undo failed");
        StagingRecord kept = store.load("vol").orElseThrow();
        assertEquals(StagePhase.ATTACHING, kept.getPhase(), "kept for unstage or the start-up recovery to undo");
        assertFalse(kept.hasDevice());
        assertEquals(CONTEXT, kept.getVolumeContextMap());

        transport.abandonFails = false;
        volumes.stage(stage("ext4"));
        assertEquals(StagePhase.STAGED, store.load("vol").orElseThrow().getPhase());
        volumes.unstage(new Requests.Unstage("vol", staging.toString()));
        assertEquals(Optional.empty(), store.load("vol"));
    }

    @Test
    void aRefusedReStageOfAStagedVolumeUndoesNothing() throws Exception {
        volumes.stage(stage("ext4"));
        VolumeException refused = assertThrows(VolumeException.class, () -> volumes.stage(stage("xfs")));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome(), refused.getMessage());
        assertEquals(List.of(), transport.abandoned, "the staged volume's attach stays");
        assertEquals(StagePhase.STAGED, store.load("vol").orElseThrow().getPhase());
        assertTrue(Host.real().mounter().isMountPoint(staging), "and its mount");

        volumes.unstage(new Requests.Unstage("vol", staging.toString()));
        assertEquals(Optional.empty(), store.load("vol"));
    }

    @Test
    void aReStageIsComparedByTheDeviceItsContextsName() throws Exception {
        volumes.stage(stage("ext4"));
        // The same device, named as a transport reads the contexts: publish_context over volume_context,
        // and the "transport" key only selects the transport, which is the same.
        volumes.stage(stage("ext4", Map.of("transport", "san"), Map.of("lun", " 7 ")));
        VolumeException refused = assertThrows(VolumeException.class,
                () -> volumes.stage(stage("ext4", Map.of("lun", "8", "wwid", "naa.1"), Map.of())));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome(), refused.getMessage());
        assertTrue(refused.getMessage().contains("[lun, wwid]"), refused.getMessage());
        assertFalse(refused.getMessage().contains("naa.1"), "values are not echoed: " + refused.getMessage());
        assertTrue(Host.real().mounter().isMountPoint(staging), "the staged device stays mounted");

        volumes.unstage(new Requests.Unstage("vol", staging.toString()));
        assertEquals(List.of(), transport.abandoned);
        assertEquals(Optional.empty(), store.load("vol"));
    }

    @Test
    void anUnmountedRecordBindsOnlyTheFilesystemThisPluginMade() throws Exception {
        // What a crash between our mkfs and the mount leaves: STAGING, formatted here, nothing mounted.
        StagingRecord crashed = StagingRecord.newBuilder().setVolumeId("vol").setPhase(StagePhase.STAGING)
                .setTransport("san").setStagingPath(staging.toString()).setAccessMode("SINGLE_NODE_WRITER")
                .putAllVolumeContext(CONTEXT)
                .setDevice(dev.blocknode.state.v1.DeviceRecord.newBuilder().setPath(loop.device().toString())
                        .setMajor(Host.real().mounter().stat(loop.device()).rdev().major())
                        .setMinor(Host.real().mounter().stat(loop.device()).rdev().minor()))
                .setMount(dev.blocknode.state.v1.MountAccessRecord.newBuilder().setFsType("ext4")
                        .addMountFlags("no_such_ext4_option").setFormattedHere(true))
                .build();
        store.save(crashed);

        VolumeException refused = assertThrows(VolumeException.class, () -> volumes.stage(stage("xfs")));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome(), "the filesystem we made binds");
        assertEquals(StagePhase.STAGING, store.load("vol").orElseThrow().getPhase(), "a crash's record is kept");

        volumes.stage(stage("ext4")); // other mount flags than the crashed attempt's: they bound nothing
        assertEquals(List.of(), store.load("vol").orElseThrow().getMount().getMountFlagsList());
        volumes.unstage(new Requests.Unstage("vol", staging.toString()));
        assertEquals(List.of(), transport.abandoned);
        assertEquals(Optional.empty(), store.load("vol"));
    }

    private Requests.Stage stage(String fsType) {
        return stage(fsType, CONTEXT, Map.of());
    }

    private Requests.Stage stage(String fsType, Map<String, String> volumeContext,
                                 Map<String, String> publishContext) {
        return new Requests.Stage("vol", staging.toString(), new VolumeCapability(
                new AccessType.Mount(fsType, List.of(), MountOptions.NONE), AccessMode.SINGLE_NODE_WRITER),
                volumeContext, publishContext, Secrets.NONE);
    }
}
