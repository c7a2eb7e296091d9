package dev.blocknode.transport;

import dev.blocknode.logging.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The proof journals' files (the iSCSI login journal, the SCSI scan journal): what reads as an entry, and what not. */
class ProofJournalUnitTest {

    @TempDir
    Path dir;

    /**
     * An entry is read through SmallFiles, looked at before it is opened and never waited on, so a FIFO, a
     * directory or a symlink named like an entry proves nothing and is left alone with a warning, at once.
     */
    @Test
    void aFifoADirectoryOrALinkNamedLikeAnEntryProvesNothingAndIsNeverWaitedOn() throws Exception {
        ProofJournal journal = new ProofJournal(dir, "test journal");
        List<String> entry = List.of("iqn.2026-01.dev.blocknode:t", "127.0.0.1:3260", "default");
        journal.record(entry);
        Path fifo = dir.resolve(ProofJournal.nameOf(List.of("fifo")));
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        Files.createDirectory(dir.resolve(ProofJournal.nameOf(List.of("dir"))));
        Files.createSymbolicLink(dir.resolve(ProofJournal.nameOf(List.of("zero"))), Path.of("/dev/zero"));
        try (LogCapture log = LogCapture.installed()) {
            assertEquals(List.of(entry), assertTimeoutPreemptively(Duration.ofSeconds(20), journal::all));
            assertEquals(3, log.written().stream().filter(w -> w.text().contains("is not an entry of this plugin"))
                    .count(), log.written().toString());
        }
        assertTrue(Files.exists(fifo), "left alone");
    }
}
