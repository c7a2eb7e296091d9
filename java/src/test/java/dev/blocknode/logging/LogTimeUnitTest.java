package dev.blocknode.logging;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.SplittableRandom;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A log line's time is spelled exactly as Instant.toString spells it, without java.time's formatter. */
class LogTimeUnitTest {

    private static String spelled(long epochMillis) {
        StringBuilder out = new StringBuilder();
        LogTime.append(out, epochMillis);
        return out.toString();
    }

    @Test
    void spellsTheCalendarsEdgesAsJavaTimeDoes() {
        long[] edges = {0, 1, 999, 1000, -1, -1000, 86_399_999, 86_400_000,
                Instant.parse("2000-02-29T23:59:59.999Z").toEpochMilli(), // a leap day of a 400-year leap year
                Instant.parse("2100-02-28T12:00:00Z").toEpochMilli(), // 2100 is not a leap year
                Instant.parse("2100-03-01T00:00:00.010Z").toEpochMilli(),
                Instant.parse("2024-12-31T23:59:59.900Z").toEpochMilli(),
                Instant.parse("2026-11-25T07:59:34.600Z").toEpochMilli(),
                Instant.parse("9999-12-31T23:59:59.999Z").toEpochMilli(),
                Instant.parse("+10000-01-01T00:00:00Z").toEpochMilli(), // past four digits: java.time's own spelling
                Instant.parse("-0001-06-30T00:00:00Z").toEpochMilli()};
        for (long millis : edges) {
            assertEquals(Instant.ofEpochMilli(millis).toString(), spelled(millis), "epoch millis " + millis);
        }
    }

    @Test
    void spellsAnyMillisecondOfFourCenturiesAsJavaTimeDoes() {
        SplittableRandom random = new SplittableRandom(18);
        long end = Instant.parse("2400-01-01T00:00:00Z").toEpochMilli();
        for (int i = 0; i < 200_000; i++) {
            long millis = random.nextLong(-end / 4, end);
            assertEquals(Instant.ofEpochMilli(millis).toString(), spelled(millis), "epoch millis " + millis);
        }
    }

    @Test
    void bothFormatsStartWithIt() {
        LogRecord record = new LogRecord(Level.INFO, "m");
        record.setInstant(Instant.parse("2026-11-25T07:59:34.600Z"));
        assertTrue(new LogSetup.JsonFormatter().format(record).startsWith("{\"time\":\"2026-11-25T07:59:34.600Z\","));
        assertTrue(new LogSetup.TextFormatter().format(record).startsWith("2026-11-25T07:59:34.600Z INFO "));
    }
}
