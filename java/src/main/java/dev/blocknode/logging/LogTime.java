package dev.blocknode.logging;

import java.time.Instant;

/**
 * A log record's time written as {@link Instant#toString} writes a millisecond instant, ISO-8601 in UTC
 * ({@code 2026-11-25T07:59:34.600Z}, no fraction at a whole second), without java.time's formatter: that
 * one costs about a microsecond and 300 bytes of garbage per line, and its ~60 classes would be loaded (and
 * kept in the AOT cache) at every start for this alone.
 */
final class LogTime {

    private static final long MILLIS_PER_DAY = 86_400_000L;
    /** Days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar. */
    private static final long DAYS_0000_03_01_TO_EPOCH = 719_468;
    private static final long DAYS_PER_400_YEARS = 146_097;

    private LogTime() {
    }

    static void append(StringBuilder out, long epochMillis) {
        long days = Math.floorDiv(epochMillis, MILLIS_PER_DAY);
        long millisOfDay = Math.floorMod(epochMillis, MILLIS_PER_DAY);
        // The civil date of a day count, counting years from March so that February's length comes last:
        // 400-year eras, then the year of the era, the day of that year, the month from it.
        long shifted = days + DAYS_0000_03_01_TO_EPOCH;
        long era = Math.floorDiv(shifted, DAYS_PER_400_YEARS);
        long dayOfEra = shifted - era * DAYS_PER_400_YEARS;
        long yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365;
        long dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
        long monthFromMarch = (5 * dayOfYear + 2) / 153;
        long day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1;
        long month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
        long year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
        if (year < 0 || year > 9999) {
            out.append(Instant.ofEpochMilli(epochMillis)); // a sign and more digits: java.time's own spelling
            return;
        }
        digits(out, year, 4).append('-');
        digits(out, month, 2).append('-');
        digits(out, day, 2).append('T');
        digits(out, millisOfDay / 3_600_000, 2).append(':');
        digits(out, millisOfDay / 60_000 % 60, 2).append(':');
        digits(out, millisOfDay / 1000 % 60, 2);
        long millis = millisOfDay % 1000;
        if (millis != 0) {
            digits(out.append('.'), millis, 3);
        }
        out.append('Z');
    }

    private static StringBuilder digits(StringBuilder out, long value, int width) {
        for (long bound = 10; width > 1; width--, bound *= 10) {
            if (value < bound) {
                out.append('0');
            }
        }
        return out.append(value);
    }
}
