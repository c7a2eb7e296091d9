package dev.blocknode.volume.encryption;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The encryption key and its passphrase secret: checked from the request alone, never quoting the secret. */
class EncryptionKeysUnitTest {

    private static AttachRequest request(Map<String, String> context, Map<String, String> secrets) {
        return new AttachRequest("vol-1", context, Map.of(), new Secrets(secrets));
    }

    @Test
    void withoutTheKeyOrWithNoneAVolumeIsNotEncrypted() throws VolumeException {
        assertTrue(EncryptionKeys.passphrase(request(Map.of(), Map.of())).isEmpty());
        assertTrue(EncryptionKeys.passphrase(request(Map.of("encryption", "none"),
                Map.of("encryptionPassphrase", "unused"))).isEmpty());
    }

    @Test
    void luks2TakesThePassphraseFromTheSecrets() throws VolumeException {
        Passphrase p = EncryptionKeys.passphrase(request(Map.of("encryption", "LUKS2"),
                Map.of("encryptionPassphrase", "s3cret-canary"))).orElseThrow();
        assertFalse(p.toString().contains("s3cret"), p.toString());
    }

    @Test
    void anUnknownValueIsInvalidArgument() {
        VolumeException e = assertThrows(VolumeException.class,
                () -> EncryptionKeys.passphrase(request(Map.of("encryption", "luks1"), Map.of())));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().contains("luks2 or none"), e.getMessage());
    }

    @Test
    void luks2WithoutAPassphraseIsInvalidArgumentNamingTheSecret() {
        for (Map<String, String> secrets : java.util.List.of(Map.<String, String>of(),
                Map.of("encryptionPassphrase", ""))) {
            VolumeException e = assertThrows(VolumeException.class,
                    () -> EncryptionKeys.passphrase(request(Map.of("encryption", "luks2"), secrets)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
            assertTrue(e.getMessage().contains("encryptionPassphrase"), e.getMessage());
        }
    }

    @Test
    void anOversizedPassphraseIsRefusedWithoutQuotingIt() {
        String huge = "k".repeat(EncryptionKeys.MAX_PASSPHRASE_BYTES + 1);
        VolumeException e = assertThrows(VolumeException.class, () -> EncryptionKeys.passphrase(
                request(Map.of("encryption", "luks2"), Map.of("encryptionPassphrase", huge))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertFalse(e.getMessage().contains("kkkk"), e.getMessage());
    }
}
