package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ChapCredentialsUnitTest {

    @Test
    void noSecretsMeansNoChap() throws Exception {
        assertTrue(ChapCredentials.from(Secrets.NONE).isEmpty());
    }

    @Test
    void oneWayAndMutualChap() throws Exception {
        ChapCredentials oneWay = ChapCredentials.from(new Secrets(Map.of(
                ChapCredentials.USERNAME, "user", ChapCredentials.PASSWORD, "s3cret"))).orElseThrow();
        assertEquals(Map.of("node.session.auth.authmethod", "CHAP", ChapCredentials.USERNAME, "user",
                ChapCredentials.PASSWORD, "s3cret"), oneWay.recordSettings());
        ChapCredentials mutual = ChapCredentials.from(new Secrets(Map.of(
                ChapCredentials.USERNAME, "user", ChapCredentials.PASSWORD, "s3cret",
                ChapCredentials.USERNAME_IN, "target", ChapCredentials.PASSWORD_IN, "t4rget"))).orElseThrow();
        assertEquals("t4rget", mutual.recordSettings().get(ChapCredentials.PASSWORD_IN));
    }

    @Test
    void incompleteOrForgedSecretsAreRefused() {
        for (Map<String, String> secrets : new Map[]{
                Map.of(ChapCredentials.USERNAME, "user"),
                Map.of(ChapCredentials.PASSWORD, "pw"),
                Map.of(ChapCredentials.USERNAME_IN, "t", ChapCredentials.PASSWORD_IN, "p"),
                Map.of(ChapCredentials.USERNAME, "u", ChapCredentials.PASSWORD, "p", ChapCredentials.USERNAME_IN, "t"),
                Map.of(ChapCredentials.USERNAME, "u", ChapCredentials.PASSWORD, "pw\nnode.startup = automatic")}) {
            VolumeException e = assertThrows(VolumeException.class, () -> ChapCredentials.from(new Secrets(secrets)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
            assertFalse(e.getMessage().contains("pw"), "no secret value in the message: " + e.getMessage());
        }
    }

    @Test
    void toStringNeverShowsAValue() throws Exception {
        String text = ChapCredentials.from(new Secrets(Map.of(ChapCredentials.USERNAME, "alice",
                ChapCredentials.PASSWORD, "hunter2"))).orElseThrow().toString();
        assertFalse(text.contains("hunter2") || text.contains("alice"), text);
    }
}
