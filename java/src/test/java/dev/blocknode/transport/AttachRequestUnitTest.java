package dev.blocknode.transport;

import dev.blocknode.outcome.Secrets;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class AttachRequestUnitTest {

    private static AttachRequest request(Map<String, String> volumeContext, Map<String, String> publishContext) {
        return new AttachRequest("vol-1", volumeContext, publishContext, Secrets.NONE);
    }

    @Test
    void keyFromVolumeContext() {
        assertEquals(Optional.of("/dev/sdb"), request(Map.of("devicePath", "/dev/sdb"), Map.of()).key("devicePath"));
    }

    @Test
    void keyFromPublishContext() {
        assertEquals(Optional.of("/dev/sdb"), request(Map.of(), Map.of("devicePath", "/dev/sdb")).key("devicePath"));
    }

    @Test
    void publishContextOverridesVolumeContext() {
        AttachRequest r = request(Map.of("lun", "1", "target", "t1"), Map.of("lun", "7"));
        assertEquals(Optional.of("7"), r.key("lun"));
        assertEquals(Optional.of("t1"), r.key("target"));
    }

    @Test
    void absentKeyIsEmpty() {
        assertEquals(Optional.empty(), request(Map.of("a", "1"), Map.of("b", "2")).key("c"));
    }

    @Test
    void valuesAreStripped() {
        assertEquals(Optional.of("/dev/sdb"), request(Map.of("devicePath", "  /dev/sdb\t\n"), Map.of())
                .key("devicePath"));
    }

    @Test
    void blankValuesCountAsAbsent() {
        AttachRequest r = request(Map.of("empty", "", "spaces", "   ", "tab", "\t\n"), Map.of());
        assertEquals(Optional.empty(), r.key("empty"));
        assertEquals(Optional.empty(), r.key("spaces"));
        assertEquals(Optional.empty(), r.key("tab"));
    }

    @Test
    void blankPublishValueFallsBackToVolumeContext() {
        AttachRequest r = request(Map.of("devicePath", "/dev/sdb"), Map.of("devicePath", " "));
        assertEquals(Optional.of("/dev/sdb"), r.key("devicePath"));
    }

    @Test
    void keysAreCaseSensitive() {
        assertEquals(Optional.empty(), request(Map.of("DevicePath", "/dev/sdb"), Map.of()).key("devicePath"));
    }

    @Test
    void contextsAreCopied() {
        Map<String, String> volume = new HashMap<>(Map.of("a", "1"));
        Map<String, String> publish = new HashMap<>(Map.of("b", "2"));
        AttachRequest r = request(volume, publish);
        volume.put("a", "changed");
        publish.put("c", "3");
        assertEquals(Optional.of("1"), r.key("a"));
        assertEquals(Optional.empty(), r.key("c"));
        assertThrows(UnsupportedOperationException.class, () -> r.volumeContext().put("x", "y"));
        assertThrows(UnsupportedOperationException.class, () -> r.publishContext().put("x", "y"));
    }

    @Test
    void nullContextsAreRefused() {
        assertThrows(NullPointerException.class, () -> request(null, Map.of()));
        assertThrows(NullPointerException.class, () -> request(Map.of(), null));
    }

    @Test
    void secretsAreCarried() {
        Secrets secrets = new Secrets(Map.of("chap", "s3cret"));
        AttachRequest r = new AttachRequest("v", Map.of(), Map.of(), secrets);
        assertSame(secrets, r.secrets());
        assertEquals("v", r.volumeId());
        assertFalse(r.toString().contains("s3cret"), r.toString());
    }
}
