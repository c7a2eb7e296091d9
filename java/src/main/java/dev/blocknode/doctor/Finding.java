package dev.blocknode.doctor;

import java.util.Objects;

/**
 * One thing found: which check ({@code initiator-name}, {@code find-multipaths}...: stable, a metric label), how
 * much it matters, what was found, and the fix in one line (empty for {@link Severity#OK}).
 */
public record Finding(String check, Severity severity, String message, String fix) {

    public Finding {
        Objects.requireNonNull(check, "check");
        Objects.requireNonNull(severity, "severity");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(fix, "fix");
    }

    public static Finding ok(String check, String message) {
        return new Finding(check, Severity.OK, message, "");
    }

    public static Finding warning(String check, String message, String fix) {
        return new Finding(check, Severity.WARNING, message, fix);
    }

    public static Finding error(String check, String message, String fix) {
        return new Finding(check, Severity.ERROR, message, fix);
    }
}
