package dev.blocknode.logging;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PrintableUnitTest {

    @Test
    void lineBreaksAndControlsAreEscaped() {
        assertEquals("a\\nb\\r\\tc\\x00d\\x1be\\x7ff\\x85g", Printable.escape("a\nb\r\tc\0d\u001be\u007ff\u0085g"));
    }

    @Test
    void unicodeLineSeparatorsAndBidiOverridesAreEscaped() {
        assertEquals("a\\u2028b\\u2029c\\u202ed\\u200be", Printable.escape("a\u2028b\u2029c\u202ed\u200be"));
    }

    @Test
    void printableTextIsReturnedAsItIs() {
        String text = "vol-1 /var/lib/kubelet/pods/x \"quoted\" \\ 卷 \uD83D\uDE00";
        assertSame(text, Printable.escape(text));
        assertFalse(Printable.hasUnprintable(text));
    }

    @Test
    void aLoneSurrogateIsEscapedAndAPairKept() {
        assertEquals("a\\ud83db", Printable.escape("a\uD83Db"));
        assertTrue(Printable.hasUnprintable("\uDE00"));
    }

    @Test
    void boundedCutsAndSaysHowMuch() {
        assertEquals("abc", Printable.bounded("abc", 3));
        assertEquals("ab...[2 more characters cut]", Printable.bounded("abcd", 2));
        // Escapes count toward the bound: what is cut is what would have been shown.
        assertEquals("\\n...[2 more characters cut]", Printable.bounded("\n\n", 2));
    }

    @Test
    void boundedNeverSplitsASurrogatePair() {
        String cut = Printable.bounded("a\uD83D\uDE00b", 2);
        assertEquals("a...[3 more characters cut]", cut);
        assertFalse(Printable.hasUnprintable(cut));
    }
}
