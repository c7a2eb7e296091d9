package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.mount.Mounter;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.ScriptedIscsiadm;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.fc.FcTransport;
import dev.blocknode.transport.iscsi.IscsiAdm;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.NodeRecordFiles;
import dev.blocknode.transport.local.LocalTransport;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.volume.encryption.CryptMappingName;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeUnstageVolume of a volume whose staging record is gone: the record is rebuilt from the mount at the
 * staging path and a fabricated sysfs (map -> slaves -> SCSI hosts -> iSCSI sessions or FC HBA ports), and
 * the LUN is released through the transports' own detach: map flushed, paths flushed and deleted, sessions
 * logged out only when they carry no other LUN.
 */
class StagingRecordRebuilderUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String OTHER_NAA = "60014052e3c1e6a5b4c34b58a1f2e3e4";
    private static final String[] PORTALS = {"127.0.0.1:3260", "127.0.0.2:3260"};
    private static final Duration RELEASE = Duration.ofSeconds(60);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ManualClock clock;
    private RecordingBlockDevices block;
    private StagingMounter mounter;
    private RecordStore store;
    private IscsiTransport iscsi;
    private ScriptedIscsiadm iscsiadm;
    private FcTransport fc;
    private VolumeStager stager;
    private Path staging;
    private Host host;
    private Transports transports;
    private Path kubelet;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        clock = new ManualClock();
        block = new RecordingBlockDevices(sysfs.paths());
        mounter = new StagingMounter();
        host = new Host(sysfs.paths(), commands, mounter, block);
        LunAttacher.Timeouts timeouts = new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30),
                RELEASE);
        Path database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        iscsi = new IscsiTransport(host, new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(),
                () -> false, timeouts);
        fc = new FcTransport(host, sysfs, clock.waiter(), () -> false, timeouts);
        transports = new Transports(List.of(new LocalTransport(host), fc, iscsi));
        kubelet = Files.createDirectories(temp.resolve("kubelet")).toRealPath();
        store = new RecordStore(temp.resolve("state"));
        stager = stagerOver(store);
        staging = Files.createDirectories(kubelet.resolve("plugins/kubernetes.io/csi/driver/vol-1/globalmount"));
    }

    private VolumeStager stagerOver(RecordStore recordStore) throws IOException {
        KubeletPaths paths = new KubeletPaths(kubelet);
        StagingRecords records = new StagingRecords(recordStore);
        OperationGuard guard = new OperationGuard();
        StalePublications stale = new StalePublications(host, paths, records,
                new VolumePublisher(host, paths, records, guard), guard);
        return new VolumeStager(new NodeParts(host, paths, records, transports), guard,
                new FilesystemSettings(FilesystemType.EXT4, true), stale,
                new VolumeFences(VolumeFences.Settings.of("test-node", Duration.ofSeconds(10)), transports, guard),
                new VolumeLimit(VolumeLimit.Settings.NONE, records));
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    // ---- iSCSI -------------------------------------------------------------------------------------

    private String[] node(String portal, String... operation) {
        return iscsiadm.node(portal, operation);
    }

    /** LUN 3 of the target through two sessions (hosts 3 and 4) under map mpatha, as attach leaves it. */
    private Attachment iscsiLunStaged() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
        for (int i = 0; i < 2; i++) {
            iscsiadm.expectRecordCreated(PORTALS[i]);
            iscsiadm.expectLogin(PORTALS[i], i + 1, i + 3);
        }
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        Attachment attachment = iscsi.attach(new AttachRequest("vol-1", Map.of("targetPortal", PORTALS[0],
                "portals", PORTALS[1], "iqn", IQN, "lun", "3"), Map.of(), Secrets.NONE));
        commands.assertAllConsumed();
        mounter.mounted(staging, attachment.number());
        return attachment;
    }

    private void unstage() throws VolumeException {
        stager.unstage(new Requests.Unstage("vol-1", staging.toString()));
    }

    @Test
    void theTransportTracesTheSameAttachmentAttachRecorded() throws Exception {
        Attachment recorded = iscsiLunStaged();
        Attachment traced = iscsi.attachmentOf(recorded.number()).orElseThrow();
        assertEquals(recorded, traced);
        assertTrue(fc.attachmentOf(recorded.number()).isEmpty(), "iSCSI paths are not FC's");
        assertTrue(iscsi.attachmentOf(new DeviceNumber(7, 3)).isEmpty(), "no such device");
    }

    @Test
    void anIscsiLunWithoutRecordIsReleasedAndItsSessionsLoggedOut() throws Exception {
        iscsiLunStaged();
        int callsBefore = commands.calls().size();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);

        unstage();

        assertEquals(List.of(staging), mounter.unmounted);
        assertEquals(List.of(sysfs.paths().dev().resolve("dm-0"), sysfs.paths().dev().resolve("sdb"),
                sysfs.paths().dev().resolve("sdc")), block.flushed(), "the map first, then each path");
        assertFalse(sysfs.hasMap("dm-0"));
        assertEquals(List.of(), sysfs.diskNames());
        assertFalse(Files.exists(sysfs.sys().resolve("class/iscsi_session/session1")));
        assertTrue(store.all().isEmpty(), "the rebuilt record is deleted once all is gone");
        assertEquals(6, commands.calls().size() - callsBefore, "dmsetup, multipath -f, a logout and a record delete per portal");

        unstage(); // kubelet's retry: nothing is left, nothing is done
        assertEquals(1, mounter.unmounted.size());
    }

    @Test
    void aSessionThatCarriesAnotherLunIsKept() throws Exception {
        iscsiLunStaged();
        // Another volume's LUN 4 on the same two sessions.
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + OTHER_NAA);
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 4), "sde", new DeviceNumber(8, 64), "naa." + OTHER_NAA);
        sysfs.addMap(1, "mpathb", "3" + OTHER_NAA, List.of("sdd", "sde"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        for (String portal : PORTALS) {
            commands.expect(node(portal, "-o", "delete")).anyTimes(); // never --logout
        }

        unstage();

        assertEquals(List.of("sdd", "sde"), sysfs.diskNames());
        assertTrue(sysfs.hasMap("dm-1"));
        assertTrue(Files.exists(sysfs.sys().resolve("class/iscsi_session/session1")));
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("--logout")), commands.commandLines().toString());
    }

    @Test
    void aPartialTeardownIsFinishedByTheRetryFromTheRebuiltRecord() throws Exception {
        iscsiLunStaged();
        sysfs.addDm(5, "vg0-data", "LVM-held", List.of("dm-0"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use").anyTimes();

        VolumeException busy = assertThrows(VolumeException.class, this::unstage);

        assertEquals(VolumeException.Outcome.INTERNAL, busy.outcome());
        assertTrue(busy.getMessage().contains("in use by dm-5 (vg0-data)"), busy.getMessage());
        assertEquals(RELEASE, clock.elapsed(), "bounded: the release timeout, then the error");
        assertEquals(List.of("sdb", "sdc"), sysfs.diskNames(), "no path deleted from under a live map");
        StagingRecord left = store.load("vol-1").orElseThrow();
        assertEquals(StagePhase.UNSTAGING, left.getPhase());
        assertEquals("iscsi", left.getTransport());
        assertEquals(WWID, left.getAttachmentMap().get("wwid"));
        assertFalse(mounter.isMountPoint(staging), "unmounted: only the record still knows the LUN");

        // The holder goes away; kubelet retries.
        sysfs.removeMap("dm-5");
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        unstage();
        assertEquals(List.of(), sysfs.diskNames());
        assertTrue(store.all().isEmpty());
    }

    // ---- an encrypted volume -----------------------------------------------------------------------

    private static final DeviceNumber CRYPT = new DeviceNumber(253, 1);

    /** The volume's LUKS2 mapping dm-1 over map mpatha (dm-0), mounted at the staging path, as a stage leaves it. */
    private String encryptedLunStaged(String mappingName, String uuid) throws Exception {
        iscsiLunStaged();
        sysfs.addDm((int) CRYPT.minor(), mappingName, uuid, List.of("dm-0"));
        mounter.mounted(staging, CRYPT);
        return mappingName;
    }

    private static String luks2Uuid(String mappingName) {
        return CryptMappingName.LUKS2_DM_UUID_PREFIX + "0f1e2d3c4b5a69788796a5b4c3d2e1f0-" + mappingName;
    }

    @Test
    void anEncryptedVolumesMappingIsClosedAfterTheUnmountAndBeforeTheMapAndSessionsGo() throws Exception {
        String mapping = encryptedLunStaged(CryptMappingName.of("vol-1"), luks2Uuid(CryptMappingName.of("vol-1")));
        List<String> order = new ArrayList<>();
        commands.expect("cryptsetup", "close", mapping).andDo(c -> {
            order.add("close, " + mounter.unmounted.size() + " unmounted");
            sysfs.removeMap("dm-1");
        });
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path")
                .andDo(c -> order.add("map, mapping there: " + sysfs.hasMap("dm-1")));
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);

        unstage();

        assertEquals(List.of("close, 1 unmounted", "map, mapping there: false"), order);
        assertEquals(List.of(staging), mounter.unmounted);
        assertEquals(List.of(sysfs.paths().dev().resolve("dm-0"), sysfs.paths().dev().resolve("sdb"),
                sysfs.paths().dev().resolve("sdc")), block.flushed(), "the attached map, then each path");
        assertFalse(sysfs.hasMap("dm-0"));
        assertEquals(List.of(), sysfs.diskNames());
        assertFalse(Files.exists(sysfs.sys().resolve("class/iscsi_session/session1")));
        assertTrue(store.all().isEmpty());

        unstage(); // kubelet's retry: nothing left, nothing done
        assertEquals(1, mounter.unmounted.size());
    }

    @Test
    void theRebuiltRecordOfAnEncryptedVolumeNamesItsMappingAndTheDeviceBelow() throws Exception {
        String mapping = encryptedLunStaged(CryptMappingName.of("vol-1"), luks2Uuid(CryptMappingName.of("vol-1")));
        commands.expect("cryptsetup", "close", mapping).fails(5, "Device " + mapping + " is still in use.");

        VolumeException busy = assertThrows(VolumeException.class, this::unstage);

        assertTrue(busy.getMessage().contains("cryptsetup close " + mapping), busy.getMessage());
        StagingRecord left = store.load("vol-1").orElseThrow();
        assertEquals(StagePhase.UNSTAGING, left.getPhase());
        assertEquals("iscsi", left.getTransport());
        assertEquals(WWID, left.getAttachmentMap().get("wwid"));
        assertEquals(new DeviceNumber(253, 0), StagingRecords.deviceNumber(left), "the attached map");
        assertEquals(mapping, left.getCrypt().getMappingName());
        assertEquals(CRYPT, StagingRecords.usedNumber(left), "the mapping, what was mounted");
        assertEquals(sysfs.paths().dev().resolve("dm-1").toString(), left.getCrypt().getOpened().getPath());
        assertTrue(sysfs.hasMap("dm-0"), "nothing below a mapping that would not close is taken down");

        // Whatever held the mapping lets go; kubelet retries from the saved record.
        commands.expect("cryptsetup", "close", mapping).andDo(c -> sysfs.removeMap("dm-1"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        unstage();
        assertEquals(List.of(), sysfs.diskNames());
        assertTrue(store.all().isEmpty());
    }

    /** An operator's own LUKS mapping is not blocknode's: unmounted and flushed as a device on the node, never closed. */
    @Test
    void aMappingThatIsNotBlocknodesIsNeverClosedNorWhatIsBelowIt() throws Exception {
        encryptedLunStaged("luks-home", luks2Uuid("luks-home"));

        unstage();

        assertEquals(List.of(staging), mounter.unmounted);
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("cryptsetup")
                || c.contains("multipath -f") || c.contains("--logout")), commands.commandLines().toString());
        assertTrue(sysfs.hasMap("dm-1") && sysfs.hasMap("dm-0"));
        assertEquals(List.of("sdb", "sdc"), sysfs.diskNames());
        assertTrue(store.all().isEmpty());
    }

    /** A dm device under the volume's mapping name that cryptsetup did not open (no LUKS2 uuid) is not closed either. */
    @Test
    void aDmDeviceUnderTheVolumesNameButNotLuks2IsNeverClosed() throws Exception {
        encryptedLunStaged(CryptMappingName.of("vol-1"), "LVM-tAbLe" + CryptMappingName.of("vol-1"));

        unstage();

        assertEquals(List.of(), mounter.unmounted, "named as blocknode's but not this volume's mapping: left alone");
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("cryptsetup")),
                commands.commandLines().toString());
        assertTrue(sysfs.hasMap("dm-1") && sysfs.hasMap("dm-0"));
        assertTrue(store.all().isEmpty());
    }

    /** Another volume's mapping (blocknode's name for another volume id) at this staging path is left alone. */
    @Test
    void anotherVolumesMappingIsLeftAlone() throws Exception {
        String other = CryptMappingName.of("vol-2");
        encryptedLunStaged(other, luks2Uuid(other));

        unstage();

        assertEquals(List.of(), mounter.unmounted);
        assertTrue(sysfs.hasMap("dm-1") && sysfs.hasMap("dm-0"));
        assertEquals(List.of("sdb", "sdc"), sysfs.diskNames());
        assertTrue(store.all().isEmpty(), "no record is made for another volume's mapping");
    }

    /** The volume's mapping over two devices is no stage's: refused, with nothing changed. */
    @Test
    void theVolumesMappingOverMoreThanOneDeviceIsRefusedWithNothingDone() throws Exception {
        String mapping = CryptMappingName.of("vol-1");
        encryptedLunStaged(mapping, luks2Uuid(mapping));
        sysfs.addSlave("dm-1", "sdb");

        VolumeException refused = assertThrows(VolumeException.class, this::unstage);

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("cryptsetup close " + mapping), refused.getMessage());
        assertEquals(List.of(), mounter.unmounted);
        assertTrue(store.all().isEmpty());
    }

    // ---- FC and others -----------------------------------------------------------------------------

    @Test
    void aSinglePathFcDiskWithoutRecordIsFlushedAndDeleted() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, "0x500601603ba0415a", "Online", 0);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        mounter.mounted(staging, new DeviceNumber(8, 16));

        unstage();

        assertEquals(List.of(sysfs.paths().dev().resolve("sdb"), sysfs.paths().dev().resolve("sdb")), block.flushed(),
                "flushed after the unmount, and again right before its delete");
        assertFalse(sysfs.hasDisk("sdb"));
        assertEquals(List.of(), commands.calls());
        assertTrue(store.all().isEmpty());
    }

    @Test
    void aDeviceNoTransportAttachesIsOnlyUnmountedAndFlushed() throws Exception {
        // A SCSI disk on a plain HBA (no iSCSI session, no fc_host): the local transport's, never deleted.
        sysfs.addDisk(new ScsiAddress(0, 0, 0, 0), "sda", new DeviceNumber(8, 0), "naa." + NAA);
        mounter.mounted(staging, new DeviceNumber(8, 0));

        unstage();

        assertEquals(List.of(staging), mounter.unmounted);
        assertEquals(List.of(sysfs.paths().dev().resolve("sda")), block.flushed());
        assertTrue(sysfs.hasDisk("sda"));
        assertEquals(List.of(), sysfs.writes());
        assertEquals(List.of(), commands.calls());
        assertTrue(store.all().isEmpty());
    }

    @Test
    void anotherVolumesMountAtTheStagingPathIsLeftAlone() throws Exception {
        mounter.mounted(staging, new DeviceNumber(8, 0));
        store.save(StagingRecord.newBuilder().setVolumeId("vol-other").setStagingPath(staging.toString()).build());
        unstage();
        assertEquals(List.of(), mounter.unmounted);
        assertEquals(1, store.all().size());
    }

    /** The unreadable record may be the volume mounted there: the teardown of a guess is refused, not done. */
    @Test
    void aMountAnUnreadableRecordMayClaimIsLeftAloneAndTheCallRefused() throws Exception {
        mounter.mounted(staging, new DeviceNumber(8, 0));
        Path bad = Files.writeString(store.directory().resolve("0".repeat(64) + ".pb"), "not a record");
        VolumeStager restarted = stagerOver(new RecordStore(temp.resolve("state")));

        VolumeException refused = assertThrows(VolumeException.class,
                () -> restarted.unstage(new Requests.Unstage("vol-1", staging.toString())));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains(bad.toString()), refused.getMessage());
        assertEquals(List.of(), mounter.unmounted);
    }

    @Test
    void nothingMountedIsNothingToDo() throws Exception {
        unstage();
        assertEquals(List.of(), mounter.unmounted);
        assertTrue(store.all().isEmpty(), "no record is made for nothing");
    }

    /** The staging mount of one device: mounted until unmounted; everything else is not a mount point. */
    private static final class StagingMounter implements Mounter {

        final List<Path> unmounted = new ArrayList<>();
        private final Map<Path, DeviceNumber> mounts = new HashMap<>();

        void mounted(Path path, DeviceNumber device) {
            mounts.put(path, device);
        }

        @Override
        public void mount(Path device, Path target, String fsType, MountOptions options) {
            throw new AssertionError("unstage must not mount");
        }

        @Override
        public void bind(Path source, Path target, MountOptions options) {
            throw new AssertionError("unstage must not bind");
        }

        /** A path by descriptor (/proc/self/fd/N/name), as the plugin gives it, named as the test knows it. */
        private static Path named(Path path) {
            Path descriptors = Path.of("/proc/self/fd");
            if (!path.startsWith(descriptors) || path.getNameCount() < 4) {
                return path;
            }
            try {
                Path directory = Files.readSymbolicLink(descriptors.resolve(path.getName(3)));
                return directory.resolve(path.subpath(4, path.getNameCount()));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public boolean unmount(Path target) {
            unmounted.add(named(target));
            return mounts.remove(named(target)) != null;
        }

        @Override
        public boolean isMountPoint(Path path) {
            return mounts.containsKey(named(path));
        }

        @Override
        public FileStat stat(Path original) {
            Path path = named(original);
            DeviceNumber device = mounts.getOrDefault(path, new DeviceNumber(0, 42));
            return new FileStat(device, new DeviceNumber(0, 0), 040755,
                    mounts.containsKey(path) ? FileStat.MountRoot.YES : FileStat.MountRoot.NO);
        }

        @Override
        public List<MountEntry> mountsWhere(Predicate<MountEntry> wanted) {
            return mounts.entrySet().stream().map(e -> new MountEntry(100, 1, e.getValue(), "/", e.getKey(), "rw",
                    "ext4", "/dev/x", "rw")).filter(wanted).toList();
        }
    }
}
