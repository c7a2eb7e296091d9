package dev.blocknode.client;

import dev.blocknode.logging.Printable;
import dev.blocknode.state.KeptLeftovers;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.NextSteps;
import dev.blocknode.volume.read.NodeStatusReader.NodeStatus;
import dev.blocknode.volume.read.NodeStatusReader.Publication;
import dev.blocknode.volume.read.NodeStatusReader.UnreadableRecord;
import dev.blocknode.volume.read.NodeStatusReader.UnrecordedMount;
import dev.blocknode.volume.read.NodeStatusReader.Volume;
import dev.blocknode.volume.read.StatusProblem;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code blocknode status}'s text form, for a person: the problems first, then one aligned row per volume, then its
 * publications, device identities, the sweep's leftovers and the unreadable records, each a section of its own.
 * Every cell is caller input or read from the host: printed escaped, so it cannot break a line or forge one.
 */
final class StatusText {

    private StatusText() {
    }

    static String of(NodeStatus status) {
        StringBuilder out = new StringBuilder();
        List<String> kept = status.sweepKept().map(KeptLeftovers.Report::kept).orElse(List.of());
        problems(out, status, kept);
        if (!status.volumes().isEmpty()) {
            volumes(out, status.volumes());
            publications(out, status.volumes());
            identities(out, status.volumes());
        }
        if (!kept.isEmpty()) {
            out.append("\nLEFT BY THE REPAIR LOOP'S SWEEP (no record names them; as of ")
                    .append(status.sweepKept().orElseThrow().at()).append(")\n");
            table(out, new String[]{"WHAT, WHERE AND WHY"}, kept.stream().map(thing -> new String[]{thing}).toList());
        }
        if (!status.unreadableRecords().isEmpty()) {
            out.append("\nUNREADABLE RECORDS\n");
            table(out, new String[]{"FILE", "REASON"},
                    status.unreadableRecords().stream().map(r -> new String[]{r.file(), r.reason()}).toList());
        }
        return out.toString();
    }

    /** Every problem, each with its next step: the volumes', the unreadable records', unrecorded mounts', kept's. */
    private static void problems(StringBuilder out, NodeStatus status, List<String> kept) {
        List<String[]> problems = new ArrayList<>();
        List<String> nextSteps = new ArrayList<>();
        for (Volume v : status.volumes()) {
            for (StatusProblem p : v.problems()) {
                problems.add(new String[]{v.volumeId(), p.reason(), p.message()});
                nextSteps.add(p.next());
            }
        }
        for (UnreadableRecord r : status.unreadableRecords()) {
            problems.add(new String[]{"-", HealthProblem.Kind.RECORD_UNREADABLE.reason(), r.reason()});
            nextSteps.add(r.next());
        }
        for (UnrecordedMount m : status.unrecordedMounts()) {
            problems.add(new String[]{m.volumeId().orElse("-"), StatusCommand.UNRECORDED_MOUNT,
                    StatusCommand.describe(m)});
            nextSteps.add(m.next());
        }
        for (String thing : kept) {
            problems.add(new String[]{"-", StatusCommand.LEFTOVERS_KEPT, thing});
            nextSteps.add(NextSteps.LEFTOVERS_KEPT);
        }
        if (problems.isEmpty()) {
            out.append("no problems: ").append(status.volumes().size()).append(" volume(s), all healthy\n");
        } else {
            out.append("PROBLEMS\n");
            table(out, new String[]{"VOLUME", "PROBLEM", "DETAIL"}, problems, nextSteps);
        }
    }

    private static void volumes(StringBuilder out, List<Volume> volumes) {
        out.append("\nVOLUMES\n");
        List<String[]> rows = new ArrayList<>();
        for (Volume v : volumes) {
            rows.add(new String[]{v.volumeId(), v.phase(), v.transport(), v.accessType(),
                    v.device().map(d -> d.path() + " (" + d.number() + ")").orElse("-"),
                    v.device().map(d -> d.present() ? "yes" : "GONE").orElse("-"),
                    v.stagingPath().isEmpty() ? "-" : v.stagingPath(),
                    v.stagingMounted().map(m -> m ? "yes" : "NO").orElse("-"),
                    v.paths().map(p -> p.serving() + "/" + p.total()).orElse("-"),
                    v.fenceKey().isPresent() ? String.format("0x%016x", v.fenceKey().getAsLong()) : "-",
                    v.problems().isEmpty() ? "ok" : String.valueOf(v.problems().size())});
        }
        table(out, new String[]{"VOLUME", "PHASE", "TRANSPORT", "ACCESS", "DEVICE", "PRESENT", "STAGING PATH",
                "MOUNTED", "PATHS", "FENCE KEY", "PROBLEMS"}, rows);
    }

    private static void publications(StringBuilder out, List<Volume> volumes) {
        List<String[]> publications = new ArrayList<>();
        for (Volume v : volumes) {
            for (Publication p : v.publications()) {
                publications.add(new String[]{v.volumeId(), p.podUid().orElse("-"), p.readOnly() ? "ro" : "rw",
                        p.mounted() ? "yes" : "NO", p.target()});
            }
        }
        if (!publications.isEmpty()) {
            out.append("\nPUBLICATIONS\n");
            table(out, new String[]{"VOLUME", "POD UID", "MODE", "MOUNTED", "TARGET"}, publications);
        }
    }

    private static void identities(StringBuilder out, List<Volume> volumes) {
        List<String[]> identities = new ArrayList<>();
        for (Volume v : volumes) {
            v.device().filter(d -> !d.identity().isEmpty())
                    .ifPresent(d -> identities.add(new String[]{v.volumeId(), d.identity()}));
        }
        if (!identities.isEmpty()) {
            out.append("\nDEVICE IDENTITIES\n");
            table(out, new String[]{"VOLUME", "IDENTITY"}, identities);
        }
    }

    private static void table(StringBuilder out, String[] header, List<String[]> given) {
        table(out, header, given, null);
    }

    /**
     * An aligned table; with {@code nextSteps}, each row is followed by a line of its own under its last column,
     * "next: " and the row's next step.
     */
    private static void table(StringBuilder out, String[] header, List<String[]> given, List<String> nextSteps) {
        List<String[]> rows = escaped(given);
        int[] widths = widths(header, rows);
        List<String[]> all = new ArrayList<>();
        all.add(header);
        all.addAll(rows);
        int lastColumn = 0;
        for (int i = 0; i < widths.length - 1; i++) {
            lastColumn += widths[i] + 2;
        }
        for (int r = 0; r < all.size(); r++) {
            String[] row = all.get(r);
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                line.append(row[i]);  // escaped when the row was built
                if (i < row.length - 1) {
                    line.append(" ".repeat(widths[i] - row[i].length() + 2));
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
            if (nextSteps != null && r > 0) {
                out.append(" ".repeat(lastColumn)).append("next: ").append(Printable.escape(nextSteps.get(r - 1)))
                        .append('\n');
            }
        }
    }

    /** A volume id or path is caller input: printed escaped, so it cannot break a line or forge one. */
    private static List<String[]> escaped(List<String[]> given) {
        List<String[]> rows = new ArrayList<>();
        for (String[] row : given) {
            String[] escaped = new String[row.length];
            for (int i = 0; i < row.length; i++) {
                escaped[i] = Printable.escape(row[i]);
            }
            rows.add(escaped);
        }
        return rows;
    }

    /** Each column as wide as its widest cell or its header. */
    private static int[] widths(String[] header, List<String[]> rows) {
        int[] widths = new int[header.length];
        for (int i = 0; i < header.length; i++) {
            widths[i] = header[i].length();
            for (String[] row : rows) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        return widths;
    }
}
