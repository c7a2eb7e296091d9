package dev.blocknode.transport.iscsi;

import dev.blocknode.transport.ProofJournal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * blocknode's own proof that it made a node record and logged in: one small file per target, portal and iface under
 * {@code <state-dir>/iscsi-logins/}, written and fsynced BEFORE {@code iscsiadm -o new}, removed once the session is
 * logged out and its record deleted. The orphan sweep ({@link OrphanSessionSweep}) touches only what an entry names:
 * a session an administrator made, or one of a blocknode older than the journal, has no entry and is never swept,
 * whatever its name looks like. An entry outlives a crash anywhere between its write and the logout, which is what
 * the sweep needs; one left over after its session is gone costs nothing (the sweep removes it).
 *
 * <p>An entry holds the target, portal and iface on three lines; the files are a {@link ProofJournal}'s. An entry is
 * read back as untrusted input: each line is checked by its format ({@link IscsiPath}, {@link Portal}) and must be
 * spelled as {@link #record} writes it, or the entry is ignored with one warning, and nothing of it is looked up,
 * joined into a path or handed to iscsiadm.
 */
public final class LoginJournal {

    public static final String DIRECTORY = "iscsi-logins";

    /** A journal that records nothing and proves nothing (tools that never log in: pv, status). */
    public static final LoginJournal NONE = new LoginJournal(new ProofJournal(null, "iSCSI login journal"));

    private final ProofJournal files;

    private LoginJournal(ProofJournal files) {
        this.files = files;
    }

    /** The journal under the plugin's state directory. */
    public static LoginJournal in(Path stateDir) {
        return new LoginJournal(new ProofJournal(stateDir.resolve(DIRECTORY), "iSCSI login journal"));
    }

    /** Records, durably, that blocknode is about to make the record of {@code path} and log in to it. */
    public void record(IscsiPath path) throws IOException {
        files.record(linesOf(path));
    }

    /** Forgets {@code path}: its session is logged out and its record deleted (or neither ever existed). */
    public void forget(IscsiPath path) throws IOException {
        files.forget(linesOf(path));
    }

    /** The paths blocknode has proof of having logged in to and not yet logged out of. */
    public List<IscsiPath> all() throws IOException {
        List<IscsiPath> paths = new ArrayList<>();
        for (List<String> lines : files.all()) {
            try {
                paths.add(pathOf(lines));
            } catch (IllegalArgumentException notAnEntry) {
                files.notAnEntry(lines, notAnEntry.getMessage());
            }
        }
        return paths;
    }

    /** The three lines an entry of {@code path} holds; the scan journal names a target the same way. */
    static List<String> linesOf(IscsiPath path) {
        return List.of(path.iqn(), path.portal().toString(), path.iface());
    }

    /**
     * The path the lines of an entry name, each checked by its format and spelled as {@link #linesOf} writes it.
     *
     * @throws IllegalArgumentException saying which line is not a target, portal or iface
     */
    static IscsiPath pathOf(List<String> lines) {
        if (lines.size() != 3) {
            throw new IllegalArgumentException(lines.size() + " line(s), not a target, portal and iface");
        }
        IscsiPath path = new IscsiPath(lines.get(0), Portal.parse(lines.get(1)), lines.get(2)); // each by its format
        if (!linesOf(path).equals(lines)) {
            // Portal.parse reads more spellings than blocknode writes (spaces, no port): such an entry is not ours.
            throw new IllegalArgumentException("portal \"" + lines.get(1) + "\" is not spelled as blocknode writes it");
        }
        return path;
    }
}
