package dev.blocknode.volume.read;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * NodeGetStorageHealth: the storage this node reaches, seen through the paths of the SAN volumes staged here,
 * per transport. When every volume of a transport has lost all its paths, the storage is unreachable from this
 * node (a dead HBA, a cut network, a fabric gone); when some volumes run on fewer paths or none, it is degraded.
 * The volumes are named in the message so an operator can find them. Reads the staging records and sysfs only,
 * like the path gauges: kubelet asks at its volume stats period, and a dead map must not block the answer.
 */
public final class StorageHealthReader {

    /** How many volumes a message names before it says "and N more": a message is for people, not a list. */
    public static final int NAMED_VOLUMES = 5;

    private final RecordStore store;
    private final Transports transports;

    public StorageHealthReader(RecordStore store, Transports transports) {
        this.store = store;
        this.transports = transports;
    }

    public List<StorageProblem> read() throws VolumeException {
        Map<String, List<Affected>> byTransport = new TreeMap<>();
        Map<String, Integer> withPaths = new TreeMap<>();
        try {
            for (StagingRecord record : store.all()) {
                if (record.getPhase() != StagePhase.STAGED
                        || RecordedBoot.of(record, store.bootId()) == RecordedBoot.EARLIER_BOOT) {
                    // Not staged in this boot: its recorded device is of that boot, and its paths are none of these.
                    continue;
                }
                Optional<PathReport> report = StagingRecords.pathHealth(transports, record);
                if (report.isEmpty()) {
                    continue;
                }
                withPaths.merge(record.getTransport(), 1, Integer::sum);
                if (report.get().failed() > 0) {
                    byTransport.computeIfAbsent(record.getTransport(), t -> new ArrayList<>())
                            .add(new Affected(record.getVolumeId(), report.get()));
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the paths of the staged volumes", e);
        }
        List<StorageProblem> problems = new ArrayList<>();
        byTransport.forEach((transport, affected) ->
                problems.add(problem(transport, affected, withPaths.get(transport))));
        return problems;
    }

    private record Affected(String volumeId, PathReport report) {
        String describe() {
            return volumeId + " (" + report.serving() + " of " + (report.serving() + report.failed())
                    + " paths serving)";
        }
    }

    private static StorageProblem problem(String transport, List<Affected> affected, int volumes) {
        boolean allCutOff = affected.size() == volumes && affected.stream().allMatch(a -> a.report().serving() == 0);
        List<String> named = affected.stream().limit(NAMED_VOLUMES).map(Affected::describe).toList();
        String list = String.join(", ", named)
                + (affected.size() > named.size() ? " and " + (affected.size() - named.size()) + " more" : "");
        if (allCutOff) {
            return new StorageProblem(StorageProblem.Severity.UNREACHABLE, camelCase(transport) + "Unreachable",
                    "none of the " + volumes + " " + transport + " volume(s) staged on this node has a path"
                            + " that serves I/O: " + list);
        }
        return new StorageProblem(StorageProblem.Severity.DEGRADED, camelCase(transport) + "PathsFailed",
                affected.size() + " of the " + volumes + " " + transport + " volume(s) staged on this node lost"
                        + " paths: " + list);
    }

    /** "iscsi" to "Iscsi", "nvme-tcp" to "NvmeTcp": the spec asks for CamelCase reasons. */
    static String camelCase(String name) {
        StringBuilder out = new StringBuilder(name.length());
        boolean upper = true;
        for (char c : name.toCharArray()) {
            if (!Character.isLetterOrDigit(c)) {
                upper = true;
                continue;
            }
            out.append(upper ? Character.toUpperCase(c) : Character.toLowerCase(c));
            upper = false;
        }
        return out.toString().isEmpty() ? "Storage" : out.toString();
    }
}
