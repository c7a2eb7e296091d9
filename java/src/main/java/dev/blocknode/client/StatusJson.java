package dev.blocknode.client;

import dev.blocknode.logging.JsonString;
import dev.blocknode.state.KeptLeftovers;
import dev.blocknode.volume.read.NextSteps;
import dev.blocknode.volume.read.NodeStatusReader;
import dev.blocknode.volume.read.NodeStatusReader.NodeStatus;
import dev.blocknode.volume.read.NodeStatusReader.Publication;
import dev.blocknode.volume.read.NodeStatusReader.UnreadableRecord;
import dev.blocknode.volume.read.NodeStatusReader.UnrecordedMount;
import dev.blocknode.volume.read.NodeStatusReader.Volume;
import dev.blocknode.volume.read.StatusProblem;

import java.util.List;
import java.util.function.BiConsumer;

/**
 * The JSON form of {@code blocknode status}, schema version {@link StatusCommand#SCHEMA_VERSION}: a documented
 * interface (docs/reference/status.md), so a field is only ever added, never renamed or given another meaning.
 */
final class StatusJson {

    private StatusJson() {
    }

    static String of(NodeStatus status) {
        StringBuilder out = new StringBuilder("{\"schemaVersion\":").append(StatusCommand.SCHEMA_VERSION)
                .append(",\"healthy\":").append(status.healthy()).append(",\"volumes\":");
        array(out, status.volumes(), StatusJson::volume);
        out.append(",\"unreadableRecords\":");
        array(out, status.unreadableRecords(), (json, r) -> json.append("{\"file\":").append(JsonString.quote(r.file()))
                .append(",\"reason\":").append(JsonString.quote(r.reason()))
                .append(",\"next\":").append(JsonString.quote(r.next())).append('}'));
        out.append(",\"unrecordedMounts\":");
        array(out, status.unrecordedMounts(), StatusJson::unrecordedMount);
        out.append(",\"sweepKept\":");
        if (status.sweepKept().isPresent()) {
            KeptLeftovers.Report report = status.sweepKept().get();
            out.append("{\"at\":").append(JsonString.quote(report.at().toString())).append(",\"kept\":");
            array(out, report.kept(), (json, thing) -> json.append(JsonString.quote(thing)));
            out.append(",\"next\":").append(JsonString.quote(NextSteps.LEFTOVERS_KEPT)).append('}');
        } else {
            out.append("null");
        }
        return out.append("}\n").toString();
    }

    private static void volume(StringBuilder out, Volume v) {
        out.append("{\"volumeId\":").append(JsonString.quote(v.volumeId()))
                .append(",\"phase\":").append(JsonString.quote(v.phase()))
                .append(",\"transport\":").append(JsonString.quote(v.transport()))
                .append(",\"accessType\":").append(JsonString.quote(v.accessType()))
                .append(",\"device\":");
        if (v.device().isPresent()) {
            NodeStatusReader.Device d = v.device().get();
            out.append("{\"path\":").append(JsonString.quote(d.path()))
                    .append(",\"majorMinor\":").append(JsonString.quote(d.number().toString()))
                    .append(",\"identity\":").append(JsonString.quote(d.identity()))
                    .append(",\"present\":").append(d.present()).append('}');
        } else {
            out.append("null");
        }
        out.append(",\"stagingPath\":").append(JsonString.quote(v.stagingPath()))
                .append(",\"stagingMounted\":").append(v.stagingMounted().map(String::valueOf).orElse("null"))
                .append(",\"paths\":");
        if (v.paths().isPresent()) {
            NodeStatusReader.Paths p = v.paths().get();
            out.append("{\"serving\":").append(p.serving()).append(",\"total\":").append(p.total())
                    .append(",\"failures\":");
            array(out, p.failures(), (json, failure) -> json.append(JsonString.quote(failure)));
            out.append('}');
        } else {
            out.append("null");
        }
        out.append(",\"publications\":");
        array(out, v.publications(), StatusJson::publication);
        out.append(",\"fenceKey\":").append(v.fenceKey().isPresent()
                ? JsonString.quote(String.format("0x%016x", v.fenceKey().getAsLong())) : "null")
                .append(",\"problems\":");
        array(out, v.problems(), StatusJson::problem);
        out.append(",\"updatedAt\":").append(v.updatedAt().map(at -> JsonString.quote(at.toString())).orElse("null"))
                .append('}');
    }

    private static void publication(StringBuilder out, Publication p) {
        out.append("{\"target\":").append(JsonString.quote(p.target()))
                .append(",\"readOnly\":").append(p.readOnly())
                .append(",\"podUid\":").append(p.podUid().map(JsonString::quote).orElse("null"))
                .append(",\"mounted\":").append(p.mounted()).append('}');
    }

    private static void problem(StringBuilder out, StatusProblem p) {
        out.append("{\"reason\":").append(JsonString.quote(p.reason()))
                .append(",\"severity\":").append(JsonString.quote(p.severity().name()))
                .append(",\"message\":").append(JsonString.quote(p.message()))
                .append(",\"next\":").append(JsonString.quote(p.next())).append('}');
    }

    private static void unrecordedMount(StringBuilder out, UnrecordedMount m) {
        out.append("{\"mountPoint\":").append(JsonString.quote(m.mountPoint().toString()))
                .append(",\"majorMinor\":").append(JsonString.quote(m.device().toString()))
                .append(",\"fsType\":").append(JsonString.quote(m.fsType()))
                .append(",\"volumeId\":").append(m.volumeId().map(JsonString::quote).orElse("null"))
                .append(",\"message\":").append(JsonString.quote(StatusCommand.describe(m)))
                .append(",\"next\":").append(JsonString.quote(m.next())).append('}');
    }

    private static <T> void array(StringBuilder out, List<T> items, BiConsumer<StringBuilder, T> item) {
        out.append('[');
        for (int i = 0; i < items.size(); i++) {
            item.accept(out.append(i == 0 ? "" : ","), items.get(i));
        }
        out.append(']');
    }
}
