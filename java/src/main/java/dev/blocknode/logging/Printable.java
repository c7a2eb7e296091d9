package dev.blocknode.logging;

/**
 * Text from a caller (ids, paths, context values, exception messages that quote them) made safe for a log
 * line or a gRPC status message: no character that could end a line, move the cursor or reorder what is
 * shown, so a caller cannot append a forged line; and, where asked, cut to a bound with a marker saying so.
 *
 * <p>The one helper every sink uses (the log formatters, the status mapper, and every line the CLI and the
 * start-up print for a person: status, doctor, pv, client, the flags' refusals) and that a message may use to
 * name a hostile value. Escaping is idempotent in effect: a backslash is left as it is, so text escaped once
 * and passed through a sink again reads the same.
 */
public final class Printable {

    /** The cap of a gRPC status message: well under the 16 KiB that gRPC's C-core clients accept. */
    public static final int STATUS_MESSAGE_LIMIT = 4096;
    /** The cap of one log message (the status message it may quote, plus what the call did). */
    public static final int LOG_MESSAGE_LIMIT = 8192;

    private Printable() {
    }

    /** Whether {@code text} holds a character {@link #escape} would rewrite. */
    public static boolean hasUnprintable(String text) {
        int ascii = 0;
        while (ascii < text.length() && text.charAt(ascii) >= 0x20 && text.charAt(ascii) < 0x7f) {
            ascii++; // printable ASCII, the usual text, without decoding code points
        }
        for (int i = ascii; i < text.length(); ) {
            int c = text.codePointAt(i);
            if (unprintable(c)) {
                return true;
            }
            i += Character.charCount(c);
        }
        return false;
    }

    /** {@code text} with every control, line-separator or formatting character written as an escape. */
    public static String escape(String text) {
        if (!hasUnprintable(text)) {
            return text; // the usual case: no copy
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); ) {
            int c = text.codePointAt(i);
            if (unprintable(c)) {
                appendEscape(out, c);
            } else {
                out.appendCodePoint(c);
            }
            i += Character.charCount(c);
        }
        return out.toString();
    }

    /** {@link #escape} cut to at most about {@code limit} characters, saying how much was left out. */
    public static String bounded(String text, int limit) {
        String escaped = escape(text);
        if (escaped.length() <= limit) {
            return escaped;
        }
        int cut = limit;
        if (Character.isHighSurrogate(escaped.charAt(cut - 1))) {
            cut--; // never split a pair: half of one is itself unprintable
        }
        return escaped.substring(0, cut) + "...[" + (escaped.length() - cut) + " more characters cut]";
    }

    /**
     * C0 and C1 controls and DEL (newline, carriage return, NUL, escape sequences...), the Unicode line and
     * paragraph separators, formatting characters (bidirectional overrides that reorder what a terminal
     * shows, zero-width characters) and lone surrogates (a pair comes here as one code point): what
     * {@link #escape} rewrites, and {@link JsonString} too.
     */
    static boolean unprintable(int c) {
        if (c >= 0x20 && c < 0x7f) {
            return false; // printable ASCII: the fast path
        }
        if (Character.isISOControl(c) || (c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE)) {
            return true;
        }
        int type = Character.getType(c);
        return type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR
                || type == Character.FORMAT;
    }

    private static void appendEscape(StringBuilder out, int c) {
        switch (c) {
            case '\n' -> out.append("\\n");
            case '\r' -> out.append("\\r");
            case '\t' -> out.append("\\t");
            default -> out.append(c < 0x100 ? String.format("\\x%02x", c) : String.format("\\u%04x", c));
        }
    }
}
