package dev.blocknode.doctor;

import java.util.Locale;

/** How much a finding matters, in increasing order: the worst one decides the command's exit code. */
public enum Severity {
    /** In place, or nothing to do. */
    OK,
    /** Works, but less well than it could (a fallback, a setting that hangs I/O on a dead LUN). */
    WARNING,
    /** Volumes of that transport fail on this node until it is fixed. */
    ERROR;

    /** As written in the JSON form and the metric's label. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
