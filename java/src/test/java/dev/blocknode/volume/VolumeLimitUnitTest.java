package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The node's volume limit over the fake lifecycle: the cap less the multipath maps no record names (a fake map
 * list here), what NodeGetInfo reports, and a new stage beyond it refused before anything is attached or recorded.
 */
class VolumeLimitUnitTest {

    @TempDir
    Path temp;

    /** The multipath maps "on the node": a test adds the numbers of maps outside blocknode, and of ours. */
    private final Set<DeviceNumber> maps = new CopyOnWriteArraySet<>();
    private final List<Set<DeviceNumber>> askedAbout = new ArrayList<>();

    private LifecycleFixture node(long cap) throws Exception {
        return new LifecycleFixture(temp, new VolumeLimit.Settings(cap, owned -> {
            askedAbout.add(Set.copyOf(owned));
            return (int) maps.stream().filter(m -> !owned.contains(m)).count();
        }));
    }

    @Test
    void withoutCapNothingIsReadReportedOrRefused() throws Exception {
        LifecycleFixture node = new LifecycleFixture(temp, new VolumeLimit.Settings(0, owned -> {
            throw new AssertionError("no cap: the maps must not be read");
        }));
        node.staged(VOLUME, node.device);
        node.staged(OTHER_VOLUME, node.otherDevice);

        assertEquals(0, node.volumes.limit().reported(), "0: no limit, as before");
        assertEquals(new VolumeLimit.Reading(0, 0, 0), node.volumes.limit().read());
        node.assertClean();
    }

    @Test
    void reportedIsTheCapLessTheMapsOutsideBlocknode() throws Exception {
        LifecycleFixture node = node(5);
        maps.add(new DeviceNumber(253, 7));
        maps.add(new DeviceNumber(253, 8));

        assertEquals(3, node.volumes.limit().reported());
        assertEquals(new VolumeLimit.Reading(5, 0, 2), node.volumes.limit().read());
    }

    @Test
    void aVolumesOwnDeviceIsNotCountedOutsideAndItsVolumeIsNotTakenOffTheReport() throws Exception {
        LifecycleFixture node = node(4);
        maps.add(node.device.number()); // blocknode's own volume's map
        maps.add(new DeviceNumber(253, 7)); // a LUN attached by hand

        node.staged(VOLUME, node.device);

        assertEquals(new VolumeLimit.Reading(4, 1, 1), node.volumes.limit().read());
        // The scheduler counts blocknode's own volume itself: the report is the total, not what is left.
        assertEquals(3, node.volumes.limit().reported());
        assertEquals(Set.of(node.device.number()), askedAbout.getLast());
    }

    @Test
    void theReportNeverFallsToZeroUnderACapSinceZeroMeansNoLimit() throws Exception {
        LifecycleFixture node = node(2);
        for (int minor = 0; minor < 5; minor++) {
            maps.add(new DeviceNumber(253, minor));
        }
        assertEquals(0, node.volumes.limit().read().limit());
        assertEquals(1, node.volumes.limit().reported());

        VolumeException refused = assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device,
                LifecycleFixture.filesystem()));
        assertEquals(VolumeException.Outcome.RESOURCE_EXHAUSTED, refused.outcome());
        assertTrue(refused.getMessage().contains("5 multipath map(s) no blocknode volume owns"), refused.getMessage());
    }

    @Test
    void aStageBeyondTheLimitIsResourceExhaustedAndLeavesNothing() throws Exception {
        LifecycleFixture node = node(2);
        maps.add(new DeviceNumber(253, 7));
        node.staged(VOLUME, node.device);
        List<String> before = node.transport.calls();

        VolumeException refused = assertThrows(VolumeException.class, () -> node.stage(OTHER_VOLUME,
                node.otherDevice, LifecycleFixture.filesystem()));

        assertEquals(VolumeException.Outcome.RESOURCE_EXHAUSTED, refused.outcome());
        assertEquals("node volume limit reached: volume vol-2 is not staged; this node already holds 1 blocknode"
                + " volume(s) of the 1 it takes (--max-volumes-per-node 2 less 1 multipath map(s) no blocknode"
                + " volume owns); nothing was attached or recorded", refused.getMessage());
        assertEquals(before, node.transport.calls(), "nothing attached, abandoned or detached");
        assertTrue(node.record(OTHER_VOLUME).isEmpty(), "no record");
        assertFalse(Files.exists(node.recordFile(OTHER_VOLUME)));
        assertFalse(Files.exists(node.staging(OTHER_VOLUME)), "no staging directory made");
        assertEquals(StagePhase.STAGED, node.phase(VOLUME), "the staged volume untouched");
        node.assertClean();

        // Once the map outside is gone, the same stage goes through.
        maps.clear();
        node.staged(OTHER_VOLUME, node.otherDevice);
        assertEquals(StagePhase.STAGED, node.phase(OTHER_VOLUME));
    }

    @Test
    void aVolumeStagedAlreadyIsNotRefusedAtTheLimit() throws Exception {
        LifecycleFixture node = node(1);
        node.staged(VOLUME, node.device);
        maps.add(new DeviceNumber(253, 7)); // the limit falls to 0 under the staged volume

        node.stage(VOLUME, node.device, LifecycleFixture.filesystem()); // kubelet's retry: idempotent, no refusal

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        node.assertClean();
    }

    @Test
    void unstagingFreesThePlace() throws Exception {
        LifecycleFixture node = node(1);
        node.staged(VOLUME, node.device);
        assertEquals(VolumeException.Outcome.RESOURCE_EXHAUSTED, assertThrows(VolumeException.class,
                () -> node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.filesystem())).outcome());

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
        node.staged(OTHER_VOLUME, node.otherDevice);

        assertEquals(StagePhase.STAGED, node.phase(OTHER_VOLUME));
    }

    @Test
    void theMapOfAnAttachInFlightIsNotCountedOutside() throws Exception {
        LifecycleFixture node = node(3);
        List<VolumeLimit.Reading> during = new ArrayList<>();
        node.transport.duringAttach(() -> {
            maps.add(node.device.number()); // the attach made its map; the record is still ATTACHING
            during.add(node.volumes.limit().read());
        });

        node.staged(VOLUME, node.device);

        assertEquals(List.of(new VolumeLimit.Reading(3, 1, 0)), during);
        assertEquals(new VolumeLimit.Reading(3, 1, 0), node.volumes.limit().read());
    }

    @Test
    void mapsThatCannotBeReadLeaveTheCapAloneAndFailNoCall() throws Exception {
        LifecycleFixture node = new LifecycleFixture(temp, new VolumeLimit.Settings(2, owned -> {
            throw new java.io.IOException("sysfs is not mounted");
        }));

        assertEquals(2, node.volumes.limit().reported(), "NodeGetInfo still answers: the cap alone");
        node.staged(VOLUME, node.device);
        node.staged(OTHER_VOLUME, node.otherDevice);
        assertEquals(new VolumeLimit.Reading(2, 2, 0), node.volumes.limit().read());
    }
}
