package dev.blocknode.testing;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** What a person's terminal may be shown: the assertion of the CLI's and the start-up's hostile-input tests. */
public final class TerminalText {

    private TerminalText() {
    }

    /**
     * No escape sequence (ESC), carriage return or other control inside a line, no Unicode line separator, and no
     * bidirectional override or other format character: only the line breaks the command meant split the text.
     */
    public static void assertSafe(String printed) {
        for (String line : printed.split("\n", -1)) {
            line.codePoints().forEach(c -> assertFalse(Character.isISOControl(c) && c != '\t'
                            || Character.getType(c) == Character.FORMAT || c == '\u2028' || c == '\u2029',
                    "U+" + Integer.toHexString(c) + " printed in: " + line));
        }
    }
}
