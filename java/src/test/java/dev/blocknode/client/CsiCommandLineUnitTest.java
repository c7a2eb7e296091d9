package dev.blocknode.client;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code blocknode client}'s request from a file ({@code @FILE}), without a plugin to call. */
class CsiCommandLineUnitTest {

    @Test
    void aRequestIsReadFromARegularFile(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("request.txt"), "volume_id: \"db1\"\nvolume_path: \"/mnt\"\n");
        NodeGetVolumeStatsRequest request = (NodeGetVolumeStatsRequest) CsiCommandLine.parseRequest(
                CsiCommandLine.find("NodeGetVolumeStats"), "@" + file);
        assertEquals("db1", request.getVolumeId());
    }

    /** A FIFO given as the request's file was waited on for ever; it is refused at once, naming it. */
    @Test
    void aFifoAsTheRequestFileIsRefusedAtOnce(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("request.txt");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        IOException refused = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThrows(IOException.class,
                () -> CsiCommandLine.parseRequest(CsiCommandLine.find("NodeGetVolumeStats"), "@" + fifo)));
        assertTrue(refused.getMessage().contains(fifo + " is a FIFO, not a regular file"), refused.getMessage());
    }
}
