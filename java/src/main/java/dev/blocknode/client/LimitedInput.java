package dev.blocknode.client;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * {@code blocknode pv}'s input as the parsers read it: UTF-8 (malformed bytes are an error, not replaced), without
 * the byte-order mark spreadsheets put first, and bounded, so that no input can make the parsers hold more than the
 * plugin image's small heap has room for: at most {@value #MAX_BYTES} bytes, no line longer than {@value #MAX_LINE}
 * characters (a value is on one line, so one huge value stops at its first {@value #MAX_LINE} characters, not at the
 * end of the input). docs/reference/pv.md lists the limits.
 */
final class LimitedInput extends Reader {

    static final int MAX_BYTES = 8 * 1024 * 1024;
    static final int MAX_LINE = 16 * 1024;

    /** A limit was passed, or the bytes are not UTF-8: what {@code blocknode pv} says; nothing more is read. */
    static final class Refused extends IOException {
        Refused(String message) {
            super(message);
        }
    }

    private final Reader decoded;
    private boolean started;
    private long line = 1;
    private int column;

    LimitedInput(InputStream in) {
        this.decoded = new InputStreamReader(new Counted(in), StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT));
    }

    @Override
    public int read(char[] buffer, int offset, int length) throws IOException {
        int n;
        try {
            n = decoded.read(buffer, offset, length);
        } catch (CharacterCodingException e) {
            throw new Refused("the input is not UTF-8 text (from line " + line + " on, a byte is not)");
        }
        if (n > 0 && !started) {
            started = true;
            if (buffer[offset] == '\uFEFF') {
                System.arraycopy(buffer, offset + 1, buffer, offset, n - 1);
                n--;
                if (n == 0) {
                    return read(buffer, offset, length);
                }
            }
        }
        for (int i = offset; i < offset + n; i++) {
            if (buffer[i] == '\n') {
                line++;
                column = 0;
            } else if (++column > MAX_LINE) {
                throw new Refused("line " + line + " is longer than " + MAX_LINE + " characters, the most a line"
                        + " of blocknode pv's input may be");
            }
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        decoded.close();
    }

    /** The bytes read so far, refused past {@link #MAX_BYTES}. */
    private static final class Counted extends FilterInputStream {

        private long count;

        Counted(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                counted(1);
            }
            return b;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int n = super.read(buffer, offset, length);
            if (n > 0) {
                counted(n);
            }
            return n;
        }

        private void counted(int n) throws Refused {
            count += n;
            if (count > MAX_BYTES) {
                throw new Refused("the input is larger than " + MAX_BYTES / (1024 * 1024) + " MiB, the most blocknode"
                        + " pv reads at once: split the list into several files");
            }
        }
    }
}
