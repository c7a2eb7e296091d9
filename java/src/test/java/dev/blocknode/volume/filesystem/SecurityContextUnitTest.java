package dev.blocknode.volume.filesystem;

import dev.blocknode.volume.request.AccessType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The SELinux context of a context mount option: what kubelet writes is taken, and anything that could end the
 * option early in mount(2)'s data string, or that the kernel's raw grammar does not have, is refused before a
 * blank device is formatted.
 */
class SecurityContextUnitTest {

    private static final String KUBELET = "\"system_u:object_r:container_file_t:s0:c1,c2\"";

    @Test
    void kubeletsQuotedContextIsReadIntoItsParts() {
        SecurityContext context = SecurityContext.parse(KUBELET).orElseThrow();

        assertEquals(new SecurityContext("system_u", "object_r", "container_file_t", "s0:c1,c2"), context);
        assertEquals("system_u:object_r:container_file_t:s0:c1,c2", context.toString(), "shown without quotes");
    }

    @ParameterizedTest
    @ValueSource(strings = {"system_u:object_r:container_file_t:s0", "\"system_u:object_r:container_file_t:s0\"",
            "system_u:object_r:svirt_image_t:s0-s0:c0.c1023", "\"system_u:object_r:svirt_image_t:s0:c0.c3,c7,c1023\"",
            "system_u:object_r:tmp_t", "user_u:role.r:type-x_t:s15"})
    void rawContextsOfEveryShapeAreTaken(String value) {
        assertTrue(SecurityContext.parse(value).isPresent(), value);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "system_u:object_r:container_file_t:s0:c1,c2",          // a comma outside quotes ends the option
            "\"system_u:object_r:container_file_t:s0:c1\",rw\"",    // a quote inside the quotes
            "\"system_u:object_r:container_file_t:s0\"\"",
            "system_u:object_r",                                   // no type
            "system_u:object_r:container_file_t:",                 // an empty level
            "system_u:object_r:container_file_t:SystemLow",        // mcstrans' names: the kernel takes raw ones
            "system_u:object_r:container_file_t:s0:c1,,c2",
            "system_u:object_r:container_file_t:s0:c99999",
            "system_u:object_r:container_file_t:s0:c1-c2",
            "system_u:object_r:container_file_t:s0;rm",
            "system_u:object_r:$(id):s0",
            "system_u:object_r:container_file_t:s0\n",
            "_u:object_r:container_file_t:s0",
            "\"\"", ""})
    void anythingElseIsRefused(String value) {
        assertEquals(Optional.empty(), SecurityContext.parse(value), value);
    }

    @Test
    void aContextIsBoundedForTheLogsItIsNamedIn() {
        String type = "t".repeat(60);
        String longest = "u:r:" + type + ":s0:" + String.join(",", java.util.Collections.nCopies(40, "c1023"));
        assertTrue(longest.length() > SecurityContext.MAX_LENGTH);
        assertFalse(SecurityContext.parse("\"" + longest + "\"").isPresent());
    }

    @Test
    void theMountContextIsTheContextOptionOfTheMountData() {
        AccessType.Mount mount = AccessType.Mount.parsed("ext4", List.of("nosuid,context=" + KUBELET, "noatime"));

        assertEquals("system_u:object_r:container_file_t:s0:c1,c2",
                SecurityContext.mountContextOf(mount.options().data()).orElseThrow().toString());
        assertEquals(Optional.empty(), SecurityContext.mountContextOf(
                AccessType.Mount.parsed("ext4", List.of("rootcontext=system_u:object_r:tmp_t:s0")).options().data()),
                "rootcontext= labels the root directory only, not the files");
    }

    @Test
    void combinationsSeLinuxRefusesAtMountTimeAreRefusedBeforeAnything() {
        String twice = assertThrows(IllegalArgumentException.class, () -> AccessType.Mount.parsed("xfs",
                List.of("context=" + KUBELET, "context=system_u:object_r:tmp_t:s0"))).getMessage();
        assertTrue(twice.contains("context= is given 2 times"), twice);
        assertFalse(twice.contains("tmp_t"), "values are never quoted: " + twice);

        String both = assertThrows(IllegalArgumentException.class, () -> AccessType.Mount.parsed("ext4",
                List.of("context=" + KUBELET + ",defcontext=system_u:object_r:tmp_t:s0"))).getMessage();
        assertTrue(both.contains("do not go together"), both);
    }

    @Test
    void aQuoteCannotSmuggleAnotherOptionIntoTheDataString() {
        assertThrows(IllegalArgumentException.class, () -> AccessType.Mount.parsed("ext4",
                List.of("context=\"system_u:object_r:container_file_t:s0\",\"x-mount.mkdir\"")));
        assertThrows(IllegalArgumentException.class, () -> AccessType.Mount.parsed("ext4",
                List.of("context=\"system_u:object_r:container_file_t:s0,journal_dev=2049\"")));
    }
}
