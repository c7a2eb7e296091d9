package dev.blocknode.outcome;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SecretsUnitTest {

    @Test
    void toStringNamesKeysButNeverValues() {
        Secrets secrets = new Secrets(Map.of(
                "node.session.auth.username", "admin-user-xyz",
                "node.session.auth.password", "hunter2-p@ss",
                "empty", ""));
        String text = secrets.toString();
        assertFalse(text.contains("admin-user-xyz"), text);
        assertFalse(text.contains("hunter2"), text);
        assertTrue(text.contains("node.session.auth.password"), text);
        assertTrue(text.contains("node.session.auth.username"), text);
        assertTrue(text.contains("redacted"), text);
        assertFalse(String.valueOf(secrets).contains("hunter2"));
        assertFalse(("" + secrets).contains("hunter2"));
    }

    @Test
    void toStringOfNone() {
        assertEquals("Secrets[] (values redacted)", Secrets.NONE.toString());
    }

    @Test
    void getAndIsEmpty() {
        Secrets secrets = new Secrets(Map.of("k", "v"));
        assertEquals(Optional.of("v"), secrets.get("k"));
        assertEquals(Optional.empty(), secrets.get("missing"));
        assertFalse(secrets.isEmpty());
        assertTrue(Secrets.NONE.isEmpty());
        assertTrue(new Secrets(Map.of()).isEmpty());
    }

    @Test
    void valuesAreCopied() {
        Map<String, String> source = new HashMap<>(Map.of("k", "v"));
        Secrets secrets = new Secrets(source);
        source.put("k", "changed");
        source.put("new", "x");
        assertEquals(Optional.of("v"), secrets.get("k"));
        assertEquals(Optional.empty(), secrets.get("new"));
    }

    @Test
    void nullsAreRefused() {
        Map<String, String> withNull = new HashMap<>();
        withNull.put("k", null);
        assertThrows(NullPointerException.class, () -> new Secrets(withNull));
        assertThrows(NullPointerException.class, () -> new Secrets(null));
    }
}
