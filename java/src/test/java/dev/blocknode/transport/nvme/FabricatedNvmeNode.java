package dev.blocknode.transport.nvme;

import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.san.FenceSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the NVMe/TCP transport's tests share: a node with a fabricated sysfs and a fake /dev/nvme-fabrics, and an
 * array whose subsystem NQN has two namespaces, listening on two portals. Connects make controllers, heads and path
 * devices as 6.1 does. Each test gets the transport as after a restart ({@link #transport()}), its records
 * ({@link #recorded}) and a scripted command runner that must be used up.
 */
abstract class FabricatedNvmeNode {

    static final String NQN = "nqn.2024-01.dev.blocknode:array1";
    static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:6b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    static final String HOST_ID = "6b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    static final String OTHER_HOST_ID = "0c9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    static final List<String> PORTALS = List.of("127.0.0.1:4420", "127.0.0.2:4420");
    static final FakeNvmeFabrics.Namespace NS1 = new FakeNvmeFabrics.Namespace(1,
            "0b5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", "1b5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b");
    static final FakeNvmeFabrics.Namespace NS2 = new FakeNvmeFabrics.Namespace(2,
            "0c5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", "1c5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b");
    static final String SECRET = "DHHC-1:00:c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1uZXZlci1sZWFrISE=:";

    @TempDir
    Path temp;

    FakeSysfs sysfs;
    ManualClock clock;
    FakeNvmeFabrics fabrics;
    RecordingBlockDevices blockDevices;
    ScriptedCommandRunner commands;
    Path hostConfig;
    /** What the staging records say, as the volume layer would answer. */
    final List<StagedVolumes.StagedVolume> records = new CopyOnWriteArrayList<>();
    NvmeTcpTransport transport;
    /** The array's namespace NS1 as NVMe commands find it: its reservations, for the fencing tests. */
    final FakeNvmeNamespace namespace = new FakeNvmeNamespace(1);

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        clock = new ManualClock();
        fabrics = new FakeNvmeFabrics(sysfs, clock).subsystem(NQN, PORTALS, NS1, NS2);
        blockDevices = new RecordingBlockDevices(sysfs.paths());
        commands = new ScriptedCommandRunner();
        hostConfig = Files.createDirectories(temp.resolve("etc-nvme"));
        Files.writeString(hostConfig.resolve("hostnqn"), HOST_NQN + "\n");
        Files.writeString(hostConfig.resolve("hostid"), HOST_ID + "\n");
        transport = transport();
    }

    /** A transport as after a restart: it knows only what sysfs and the records say. */
    NvmeTcpTransport transport() {
        return transport(Duration.ZERO);
    }

    /** Built with the repair loop's interval (zero: no loop). */
    NvmeTcpTransport transport(Duration repairInterval) {
        return new NvmeTcpTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(), blockDevices)
                .withNvme(namespace), fabric(), clock.waiter(), fence(), transport -> List.copyOf(records),
                repairInterval);
    }

    /** The takeover rule and the repair's back-off measure with the test's clock. */
    FenceSettings fence() {
        return new FenceSettings(FenceSettings.TAKEOVER_AFTER, FenceSettings.COMMAND_TIMEOUT,
                () -> clock.elapsed().toNanos());
    }

    Fabric fabric() {
        return new Fabric(hostConfig, fabrics, fabrics,
                new NvmeTcpTransport.Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(30)));
    }

    @AfterEach
    void noCommandRan() {
        commands.assertAllConsumed();
    }

    static AttachRequest request(String volumeId, FakeNvmeFabrics.Namespace ns, Secrets secrets,
                                         String... extra) {
        Map<String, String> context = new HashMap<>(Map.of("subsysNQN", NQN, "nvmePortals", String.join(",", PORTALS),
                "namespaceNGUID", ns.nguid()));
        for (int i = 0; i < extra.length; i += 2) {
            context.put(extra[i], extra[i + 1]);
        }
        return new AttachRequest(volumeId, context, Map.of(), secrets);
    }

    static AttachRequest request(String volumeId, FakeNvmeFabrics.Namespace ns) {
        return request(volumeId, ns, Secrets.NONE);
    }

    /** The record a staged volume leaves, as the volume layer keeps it. */
    void recorded(String volumeId, AttachRequest request, Attachment attachment) {
        records.add(new StagedVolumes.StagedVolume(volumeId, Optional.of(attachment.number()), request,
                attachment.details()));
    }

    static VolumeException.Outcome outcome(VolumeException e) {
        return e.outcome();
    }
}
