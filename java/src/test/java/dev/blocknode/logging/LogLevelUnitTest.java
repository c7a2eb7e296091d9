package dev.blocknode.logging;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.logging.Handler;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code --log-level}: the FINE lines of the plugin's own loggers are written at {@code fine}, and only then. */
class LogLevelUnitTest {

    private static final Logger VOLUME = Logger.getLogger("dev.blocknode.volume.VolumeStager");
    private final PrintStream stderr = System.err;

    @AfterEach
    void restore() {
        System.setErr(stderr);
        LogSetup.configure(LogFormat.TEXT);
    }

    private String logged(LogLevel level) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        LogSetup.configure(LogFormat.TEXT, level); // the ConsoleHandler takes System.err as it is now
        VOLUME.fine("a fine line");
        VOLUME.info("an info line");
        VOLUME.warning("a warning line");
        Logger.getLogger("io.grpc.netty.Something").fine("a library's fine line");
        for (Handler handler : Logger.getLogger("").getHandlers()) {
            handler.flush();
        }
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void fineLinesAppearAtFineOnly() {
        String fine = logged(LogLevel.FINE);
        assertTrue(fine.contains(" FINE VolumeStager: a fine line"), fine);
        assertTrue(fine.contains("an info line"), fine);
        assertFalse(fine.contains("a library's fine line"), fine);

        String info = logged(LogLevel.INFO);
        assertFalse(info.contains("a fine line"), info);
        assertTrue(info.contains("an info line"), info);

        String warning = logged(LogLevel.WARNING);
        assertFalse(warning.contains("an info line"), warning);
        assertTrue(warning.contains("a warning line"), warning);

        String error = logged(LogLevel.ERROR);
        assertFalse(error.contains("a warning line"), error);
    }
}
