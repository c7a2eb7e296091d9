package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.san.LunAttacher;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * What the FC transport's tests share: a fabricated node with two HBAs (host1, host2) each seeing the array's target
 * port 0x500601603ba0415a through one remote port (target ids 0 and 1), a third HBA (host3) seeing only another
 * array. LUN 3 of the target is presented on both paths; host3's LUN 3 belongs to someone else. Every command a test
 * scripts must have run by its end.
 */
abstract class FabricatedFcNode {

    static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    static final String WWID = "3" + NAA;
    static final String OTHER_NAA = "600a098038303053453f463045727a41";
    static final String TARGET = "0x500601603ba0415a";
    static final ScsiAddress PATH_1 = new ScsiAddress(1, 0, 0, 3);
    static final ScsiAddress PATH_2 = new ScsiAddress(2, 0, 1, 3);
    static final Duration PATHS = Duration.ofSeconds(15);
    static final Duration MAP = Duration.ofSeconds(30);
    static final Duration RELEASE = Duration.ofSeconds(60);

    @TempDir
    Path temp;

    FakeSysfs sysfs;
    ScriptedCommandRunner commands;
    ManualClock clock;
    RecordingBlockDevices block;
    QueryOnlyMounter mounts;
    boolean multipathd;
    FcTransport transport;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        clock = new ManualClock();
        block = new RecordingBlockDevices(sysfs.paths());
        mounts = new QueryOnlyMounter();
        transport = new FcTransport(new Host(sysfs.paths(), commands, mounts, block), sysfs, clock.waiter(),
                () -> multipathd, new LunAttacher.Timeouts(PATHS, MAP, RELEASE));
    }

    void twoHbasSeeingTheTarget() throws IOException {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.fcHost(3, "0x10000000c9a1b2c3", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.remotePort(3, 0, 0, "0x50060160aaaaaaaa", "Online", 0);
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdz", new DeviceNumber(65, 144), "naa." + OTHER_NAA, null);
    }

    void lunOn(ScsiAddress address, String name, int minor) {
        sysfs.presentLun(address, name, new DeviceNumber(8, minor), "naa." + NAA, null);
    }

    static AttachRequest request(Map<String, String> context) {
        return new AttachRequest("vol-fc", context, Map.of(), Secrets.NONE);
    }

    static AttachRequest targets(String... extra) {
        Map<String, String> context = new HashMap<>(Map.of("targetWWNs", TARGET, "lun", "3"));
        for (int i = 0; i < extra.length; i += 2) {
            context.put(extra[i], extra[i + 1]);
        }
        return request(context);
    }

    void expectMultipathWithoutDaemon(int minor, String name, List<String> slaves) {
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(minor, name, WWID, slaves));
    }

    /** LUN 3 attached through both HBAs under map mpatha (dm-0), without multipathd; its commands all ran. */
    Attachment attachedThroughTwoPaths() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));
        Attachment attachment = transport.attach(targets());
        commands.assertAllConsumed();
        return attachment;
    }

    /** The sysfs writes since the {@code index}-th. */
    List<String> writesSince(int index) {
        return sysfs.writeLog().subList(index, sysfs.writeLog().size());
    }

    static VolumeException refused(org.junit.jupiter.api.function.Executable call) {
        return assertThrows(VolumeException.class, call);
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }
}
