package dev.blocknode.transport.iscsi;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ForgedJournalEntry;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Entries of the iSCSI login journal and the SCSI scan journal forged by root in the state directory: each is read back
 * as untrusted input and checked field by field (the IQN, portal and iface by the formats a volume's context is held
 * to, the transport and LUN as the plugin writes them) before anything of it is looked up in sysfs, joined into a path
 * of open-iscsi's database or handed to iscsiadm. One that fails is ignored, with one warning, escaped, for as long as
 * it stays. Every command is scripted and none is expected: a run would fail the test. Each forged entry comes with
 * what it would have reached: a node record outside the database at the end of its "../", a session in sysfs of its
 * name, an administrator's session and disk it would pass for.
 */
class ForgedJournalEntryUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String PORTAL = "127.0.0.1:3260";
    private static final String ESCAPES = IQN + "\u001b[2J\u001b]0;owned\u0007";
    private static final String TOO_LONG = "iqn.2003-01.org.linux-iscsi.array:" + "a".repeat(300);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private Path database;
    private Path state;
    private LoginJournal logins;
    private ScanJournal scans;
    private IscsiTransport transport;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        database = Files.createDirectories(temp.resolve("etc-iscsi"));
        state = temp.resolve("state");
        logins = LoginJournal.in(state);
        scans = ScanJournal.in(state);
        transport = IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, new ManualClock().waiter(),
                () -> false,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .journals(logins, scans).build();
    }

    @AfterEach
    void noCommandRan() {
        commands.assertAllConsumed();
        assertEquals(List.of(), commands.calls(), "no command may run for a forged entry");
    }

    /** An administrator's session (session 1 on host 3) and its node record: blocknode has no entry of it. */
    private Path administratorsSession() throws IOException {
        Path record = database.resolve("nodes/" + IQN + "/127.0.0.1,3260");
        Files.createDirectories(record.getParent());
        Files.writeString(record, "node.name = " + IQN + "\n");
        sysfs.iscsiSession(1, 3, IQN, "127.0.0.1", 3260);
        return record;
    }

    /** What looks like a node record, in a directory of {@code temp} outside open-iscsi's database. */
    private Path recordOutsideTheDatabase(String directory) throws IOException {
        Path record = Files.createDirectories(temp.resolve(directory)).resolve("127.0.0.1,3260");
        Files.writeString(record, "node.name = bait\n");
        return record;
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void loginJournalEntriesThatAreNotATargetPortalAndIfaceAreIgnoredAndNothingRuns() throws Exception {
        Path record = administratorsSession();
        Path outside = recordOutsideTheDatabase("outside");
        Path beside = recordOutsideTheDatabase("beside");
        sysfs.iscsiSession(2, 4, ESCAPES, "127.0.0.1", 3260);
        sysfs.iscsiSession(3, 5, TOO_LONG, "127.0.0.1", 3260);
        Path journal = state.resolve(LoginJournal.DIRECTORY);
        List<Path> forged = List.of(
                ForgedJournalEntry.write(journal, "../../outside", PORTAL, "default"),
                ForgedJournalEntry.write(journal, IQN + "/../../../beside", PORTAL, "default"), // an IQN, then a path
                ForgedJournalEntry.write(journal, ESCAPES, PORTAL, "default"),
                ForgedJournalEntry.write(journal, IQN + "\u0000/../../outside", PORTAL, "default"),
                ForgedJournalEntry.write(journal, TOO_LONG, PORTAL, "default"),
                ForgedJournalEntry.write(journal, IQN, PORTAL, "../../../outside"),
                ForgedJournalEntry.write(journal, IQN, PORTAL, ".."),
                ForgedJournalEntry.write(journal, IQN, "a".repeat(300) + ":3260", "default"),
                ForgedJournalEntry.write(journal, IQN, "127.0.0.1", "default"), // not spelled as blocknode writes it
                ForgedJournalEntry.write(journal, IQN, PORTAL));

        List<String> warnings = sweepTwice("iSCSI login journal");

        assertEquals(List.of(), logins.all(), "no entry is one of blocknode's");
        assertWarnedOnceEach(forged, warnings);
        for (Path kept : List.of(record, outside, beside)) {
            assertTrue(Files.exists(kept), kept + " is left alone");
        }
        assertEquals(3, sysfs.sys().resolve("class/iscsi_session").toFile().list().length, "every session stays");
    }

    @Test
    void scanJournalEntriesThatAreNotAnIscsiTargetAndLunAreIgnoredAndNoDiskIsTouched() throws Exception {
        administratorsSession();
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa.60014052e3c1d6a5b4c34b58a1f2e3d4");
        sysfs.iscsiSession(2, 4, ESCAPES, "127.0.0.1", 3260);
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa.600a098038303053453f463045727a41");
        Path journal = state.resolve(ScanJournal.DIRECTORY);
        List<Path> forged = List.of(
                ForgedJournalEntry.write(journal, "iscsi", "03", IQN, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "+3", IQN, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "3\u0000", IQN, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "99999999999999999999", IQN, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "4294967296", IQN, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "3", ESCAPES, PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "3", "../../outside", PORTAL, "default"),
                ForgedJournalEntry.write(journal, "iscsi", "3", IQN, PORTAL, "default/../x"),
                ForgedJournalEntry.write(journal, "iscsi", "3", IQN, PORTAL),
                ForgedJournalEntry.write(journal, "../iscsi", "3", IQN, PORTAL, "default"));

        List<String> warnings = sweepTwice("SCSI scan journal");

        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"), "no disk is deleted");
        assertEquals(List.of(), sysfs.writeLog(), "nothing is written to sysfs");
        assertWarnedOnceEach(forged, warnings);
    }

    /** Two passes of the sweep, which must find nothing to do; the warnings of {@code journal} they logged. */
    private List<String> sweepTwice(String journal) throws Exception {
        try (LogCapture log = LogCapture.installed()) {
            assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
            assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of), "and the next pass");
            return log.written().stream().filter(w -> w.level() == Level.WARNING)
                    .map(LogCapture.Written::text).filter(text -> text.contains(journal)).toList();
        }
    }

    /** One warning for each forged file (over both passes), naming it; the file itself is left alone. */
    private static void assertWarnedOnceEach(List<Path> forged, List<String> warnings) {
        assertEquals(forged.size(), warnings.size(), "one warning per entry, not one per pass: " + warnings);
        for (Path file : forged) {
            String name = file.getFileName().toString();
            assertEquals(1, warnings.stream().filter(w -> w.contains(name)).count(), name + " in " + warnings);
            assertTrue(Files.exists(file), "a forged entry proves nothing and is left alone: " + name);
        }
        for (String warning : warnings) {
            String line = warning.stripTrailing();
            assertFalse(line.chars().anyMatch(c -> c < 0x20 || c == 0x7f), "escaped: " + line);
            assertTrue(line.length() < 1024, "bounded: " + line.length() + " characters");
        }
    }
}
