package dev.blocknode.transport.san;

import dev.blocknode.transport.ProofJournal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * blocknode's own proof that it scanned a LUN in through a target: one small file per transport, target and LUN
 * under {@code <state-dir>/scsi-scans/}, written and fsynced BEFORE the targeted scan of that LUN (at stage, and before
 * a repair's scan), removed only once the LUN's disks there are deleted (unstage, the undo of an attach). The sweep of
 * leftover LUNs ({@link LeftoverLunSweep}) touches only the disks and maps of what an entry names: a disk of a LUN
 * scanned in by anyone else (an administrator, a whole-host scan, a blocknode older than this journal) has no entry
 * and is never swept. An entry outlives a crash anywhere between the scan and the record that would name the LUN,
 * and a LUN unmapped by the storage admin while no record named it any more: the two leftovers the sweep is for.
 *
 * <p>Why per target and LUN and not per disk: the disk does not exist yet when the entry must be written, and its
 * name and H:C:T:L change with every new session; the target is what the transport reaches again to find it. The
 * transport spells the target as lines of its own (iSCSI: the IQN, portal and iface of the session; FC: the WWPN of
 * the target port, which stays when the port returns under another rport number and host).
 */
public final class ScanJournal {

    public static final String DIRECTORY = "scsi-scans";
    /** A transport's name as the plugin spells them ("iscsi", "fc", "nvme-tcp"). */
    private static final Pattern TRANSPORT = Pattern.compile("[a-z][a-z0-9-]{0,31}");
    private static final Pattern LUN = Pattern.compile("0|[1-9][0-9]{0,18}");

    /** A journal that records nothing and proves nothing: nothing it would name is ever swept. */
    public static final ScanJournal NONE = new ScanJournal(new ProofJournal(null, "SCSI scan journal"));

    /** One LUN scanned in through one target by one transport. */
    public record Entry(String transport, List<String> target, long lun) {

        public Entry {
            target = List.copyOf(target);
        }

        List<String> lines() {
            List<String> lines = new ArrayList<>();
            lines.add(transport);
            lines.add(Long.toString(lun));
            lines.addAll(target);
            return lines;
        }

        /**
         * The order a sweep takes its entries' locks in: by target, then LUN. A transport that holds several of the
         * same locks (a repair of several paths) takes them in this order too.
         */
        public String orderKey() {
            return String.join("\n", target) + "\n" + lun;
        }

        @Override
        public String toString() {
            return "LUN " + lun + " of " + String.join(" ", target);
        }
    }

    private final ProofJournal files;

    private ScanJournal(ProofJournal files) {
        this.files = files;
    }

    /** The journal under the plugin's state directory. */
    public static ScanJournal in(Path stateDir) {
        return new ScanJournal(new ProofJournal(stateDir.resolve(DIRECTORY), "SCSI scan journal"));
    }

    /** Records, durably, that blocknode is about to scan the entry's LUN in through its target. */
    public void record(Entry entry) throws IOException {
        files.record(entry.lines());
    }

    /** Forgets the entry: the LUN's disks behind its target are deleted (or none ever appeared). */
    public void forget(Entry entry) throws IOException {
        files.forget(entry.lines());
    }

    /**
     * The LUNs {@code transport} has proof of having scanned in and not yet taken away, their transport and LUN lines
     * checked by their format (an entry that fails is ignored, with one warning); what the target lines say is the
     * transport's to check ({@link LeftoverLunSweep.Targets#check}), before the entry is used.
     */
    public List<Entry> all(String transport) throws IOException {
        List<Entry> entries = new ArrayList<>();
        for (List<String> lines : files.all()) {
            if (lines.size() < 3) {
                files.notAnEntry(lines, lines.size() + " line(s), not a transport, LUN and target");
            } else if (!TRANSPORT.matcher(lines.get(0)).matches()) {
                files.notAnEntry(lines, "\"" + lines.get(0) + "\" is not a transport's name");
            } else if (lines.get(0).equals(transport)) {
                OptionalLong lun = lunOf(lines.get(1));
                if (lun.isPresent()) {
                    entries.add(new Entry(transport, lines.subList(2, lines.size()), lun.getAsLong()));
                } else {
                    files.notAnEntry(lines, "LUN \"" + lines.get(1) + "\" is not a number as blocknode writes one");
                }
            }
        }
        return entries;
    }

    /** For an entry whose target the transport finds is not one of its own ({@code why}): ignored, with one warning. */
    public void notAnEntry(Entry entry, String why) {
        files.notAnEntry(entry.lines(), why);
    }

    /** A LUN as {@link Entry#lines} writes it: a non-negative decimal, no sign, no leading zero. */
    private static OptionalLong lunOf(String line) {
        if (!LUN.matcher(line).matches()) {
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(Long.parseLong(line));
        } catch (NumberFormatException beyondALong) {
            return OptionalLong.empty();
        }
    }
}
