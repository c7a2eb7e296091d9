package dev.blocknode.logging;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What an operation did is said exactly once: in its RPC's line when one takes it, else on its own. */
class LogContextUnitTest {

    private final Logger log = Logger.getLogger("dev.blocknode.logging.LogContextUnitTest");
    private final List<String> lines = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            lines.add(record.getMessage());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void listen() {
        log.addHandler(handler);
        log.setUseParentHandlers(false);
    }

    @AfterEach
    void stop() {
        log.removeHandler(handler);
        log.setUseParentHandlers(true);
    }

    private static LogContext.Operation operation() {
        return new LogContext.Operation("NodePublishVolume", 7, "v");
    }

    @Test
    void anOutcomeTakenByTheRpcLineIsNotLoggedAgain() {
        try (LogContext.Scope ignored = LogContext.enter(operation())) {
            LogContext.outcome(log, () -> "published volume v at /t");
            assertEquals(Optional.of("published volume v at /t"), LogContext.takeOutcome());
            assertEquals(Optional.empty(), LogContext.takeOutcome(), "taken once");
        }
        assertEquals(List.of(), lines);
    }

    @Test
    void anOutcomeNobodyTookIsLoggedWhenTheOperationEnds() {
        try (LogContext.Scope ignored = LogContext.enter(operation())) {
            LogContext.outcome(log, () -> "staged volume v at /s");
            assertEquals(List.of(), lines, "not yet: the RPC line may still take it");
        }
        assertEquals(List.of("staged volume v at /s"), lines);
    }

    @Test
    void outsideAnOperationTheOutcomeIsLoggedAtOnce() {
        LogContext.outcome(log, () -> "unstaged volume v from /s");
        assertEquals(List.of("unstaged volume v from /s"), lines);
        assertEquals(Optional.empty(), LogContext.takeOutcome());
    }

    @Test
    void aNestedOperationKeepsTheOuterOnesOutcome() {
        try (LogContext.Scope outer = LogContext.enter(operation())) {
            LogContext.outcome(log, () -> "outer");
            try (LogContext.Scope inner = LogContext.enter(new LogContext.Operation("inner", 8, "w"))) {
                assertEquals(Optional.empty(), LogContext.takeOutcome());
            }
            assertEquals(Optional.of("outer"), LogContext.takeOutcome());
        }
        assertEquals(List.of(), lines);
    }
}
