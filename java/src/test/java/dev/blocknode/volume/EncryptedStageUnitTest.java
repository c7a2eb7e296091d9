package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.exec.Command;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.volume.encryption.CryptMappingName;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.block;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A volume staged with volume_context encryption: luks2, against scripted cryptsetup and a fake dm-crypt mapping that
 * appears in sysfs as a holder of the attached device: a blank device is formatted LUKS2 and its filesystem made on
 * the opened mapping; a LUKS2 device is opened; a wrong passphrase or a device that holds anything else is refused
 * with nothing opened or left; unstage unmounts, then closes, then detaches; the passphrase is only ever stdin.
 */
class EncryptedStageUnitTest {

    private static final String KEY = "luks-unit-canary-7f3a";
    private static final String MAPPING = CryptMappingName.of(VOLUME);
    private static final DeviceNumber OPENED = new DeviceNumber(253, 7);
    private static final String LUKS_FOUND = "TYPE=crypto_LUKS\nUSAGE=crypto\nVERSION=2\n";

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private Path mapped;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
        mapped = node.sysfs.paths().dev().resolve("mapper").resolve(MAPPING);
    }

    @AfterEach
    void clean() throws IOException {
        node.assertClean();
        for (Command call : node.commands.calls()) {
            assertFalse(String.join(" ", call.argv()).contains(KEY), "the passphrase in argv: " + call);
        }
        Path records = temp.resolve("state");
        if (Files.exists(records)) {
            try (var files = Files.walk(records)) {
                for (Path file : files.filter(Files::isRegularFile).toList()) {
                    assertFalse(new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1).contains(KEY),
                            "the passphrase in " + file);
                }
            }
        }
    }

    private Requests.Stage request(dev.blocknode.volume.request.VolumeCapability capability, String passphrase) {
        Map<String, String> context = new HashMap<>(Map.of("encryption", "luks2",
                ScriptedTransport.DEVICE_KEY, node.device.device().getFileName().toString()));
        return new Requests.Stage(VOLUME, node.staging(VOLUME).toString(), capability, context, Map.of(),
                new Secrets(Map.of("encryptionPassphrase", passphrase)));
    }

    private static boolean keyOnStdin(Command c, String key) {
        return java.util.Arrays.equals(c.stdin(), key.getBytes(StandardCharsets.UTF_8));
    }

    private ScriptedCommandRunner.Expectation expectLuksFormat() {
        return node.commands.expect("cryptsetup luksFormat", c -> c.argv().get(1).equals("luksFormat")
                && c.argv().getLast().equals(node.device.device().toString()) && keyOnStdin(c, KEY));
    }

    private ScriptedCommandRunner.Expectation expectCheck(String key) {
        return node.commands.expect("cryptsetup open --test-passphrase", c -> c.argv().contains("--test-passphrase")
                && c.argv().getLast().equals(node.device.device().toString()) && keyOnStdin(c, key));
    }

    /** cryptsetup open, which makes the mapping as the kernel would: a dm device holding the attached one. */
    private void expectOpen() {
        node.commands.expect("cryptsetup open", c -> c.argv().equals(List.of("cryptsetup", "open", "--type", "luks2",
                "--key-file=-", node.device.device().toString(), MAPPING)) && keyOnStdin(c, KEY))
                .andDo(c -> {
                    node.sysfs.addDm((int) OPENED.minor(), MAPPING, "CRYPT-LUKS2-0-" + MAPPING, List.of("vdb"));
                    Files.createDirectories(mapped.getParent());
                    Files.createFile(mapped);
                    node.machine.blockDevice(mapped, OPENED);
                    node.block.claimed(mapped, false).sized(mapped, (1L << 30) - (16L << 20));
                }).succeeds("");
    }

    private void expectClose() {
        node.commands.expect("cryptsetup", "close", MAPPING).andDo(c -> {
            if (node.sysfs.hasMap("dm-" + OPENED.minor())) {
                node.sysfs.removeMap("dm-" + OPENED.minor());
            }
            Files.deleteIfExists(node.sysfs.sys().resolve("devices/virtual/block/vdb/holders/dm-" + OPENED.minor()));
            Files.delete(mapped);
        }).succeeds("");
    }

    private StagingRecord record() {
        return node.record(VOLUME).orElseThrow();
    }

    @Test
    void aBlankDeviceIsFormattedLuks2AndItsFilesystemMadeAndMountedOnTheMapping() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        expectLuksFormat().succeeds("");
        expectOpen();
        node.commands.expect("blkid", "-p", "-o", "export", mapped.toString()).returns(2, "", "");
        node.commands.expect(dev.blocknode.volume.filesystem.FilesystemType.EXT4.format(mapped).argv()
                .toArray(String[]::new)).succeeds("");

        node.volumes.stage(request(filesystem(), KEY));

        assertEquals(List.of("mount " + mapped + " -> " + node.staging(VOLUME) + " (ext4)"), node.machine.actions());
        StagingRecord staged = record();
        assertEquals(StagePhase.STAGED, staged.getPhase());
        assertEquals(MAPPING, staged.getCrypt().getMappingName());
        assertEquals(OPENED.minor(), staged.getCrypt().getOpened().getMinor());
        assertTrue(staged.getCrypt().getFormattedHere() && staged.getMount().getFormattedHere());
        assertEquals(node.device.device().toString(), staged.getDevice().getPath(), "the attached device stays");

        node.machine.clearActions();
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertEquals(List.of("unmount " + node.staging(VOLUME)), node.machine.actions());
        assertFalse(Files.exists(mapped), "the mapping is closed");
        assertEquals("detach vdb", node.transport.calls().getLast());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void aLuks2DeviceIsOpenedWithTheKeyAndRawBlockPublishesTheOpenedDevice() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck(KEY).succeeds("");
        expectOpen();

        node.volumes.stage(request(block(), KEY));
        assertFalse(record().getCrypt().getFormattedHere(), "opened, not formatted");

        Path target = node.blockTarget("pod-a", VOLUME);
        node.publish(VOLUME, target, block(), false);
        assertEquals(List.of("bind " + mapped + " -> " + target), node.machine.actions());

        node.unpublish(VOLUME, target);
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
        assertTrue(node.record(VOLUME).isEmpty());
        assertFalse(Files.exists(mapped));
    }

    @Test
    void aWrongPassphraseIsFailedPreconditionWithNothingOpenedOrLeft() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck("not-" + KEY).fails(2, "No key available with this passphrase.\n");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request(filesystem(), "not-" + KEY)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("encryptionPassphrase"), refused.getMessage());
        assertFalse(refused.getMessage().contains(KEY), refused.getMessage());
        assertFalse(Files.exists(mapped));
        assertTrue(node.machine.actions().isEmpty());
        assertTrue(node.record(VOLUME).isEmpty());
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls());
    }

    @Test
    void aDeviceHoldingAFilesystemIsNeverEncrypted() throws Exception {
        node.expectProbe(node.device).returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request(filesystem(), KEY)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("an ext4 filesystem"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void aRetryAfterAFailedMountFindsItsMappingOpenAndOpensNothingAgain() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck(KEY).succeeds("");
        expectOpen();
        for (int attempt = 1; attempt <= 2; attempt++) { // the filesystem found and preened by each attempt
            node.commands.expect("blkid", "-p", "-o", "export", mapped.toString())
                    .returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");
            node.commands.expect(dev.blocknode.volume.filesystem.Ext4Preen.command(mapped).argv()
                    .toArray(String[]::new)).returns(0, "", "");
        }
        node.machine.failNext("mount", node.staging(VOLUME), new IOException("EIO"));

        VolumeException failed = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request(filesystem(), KEY)));
        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertEquals(StagePhase.STAGING, record().getPhase());
        assertTrue(Files.exists(mapped), "kept open for the retry, as the record says");

        node.volumes.stage(request(filesystem(), KEY));
        assertEquals(List.of("mount " + mapped + " -> " + node.staging(VOLUME) + " (ext4)"), node.machine.actions());

        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
        assertTrue(node.record(VOLUME).isEmpty());
    }

    private String stageEncryptedFilesystem() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck(KEY).succeeds("");
        expectOpen();
        node.commands.expect("blkid", "-p", "-o", "export", mapped.toString())
                .returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");
        node.commands.expect(dev.blocknode.volume.filesystem.Ext4Preen.command(mapped).argv().toArray(String[]::new))
                .returns(0, "", "");
        node.volumes.stage(request(filesystem(), KEY));
        return node.staging(VOLUME).toString();
    }

    private long expand(String staging, Secrets secrets) throws VolumeException {
        return node.volumes.expand(new Requests.Expand(VOLUME, staging, staging, 2L << 30, 0,
                java.util.Optional.of(filesystem()), secrets));
    }

    /** cryptsetup resize, which grows the mapping as the kernel would: to the device less the 16 MiB header. */
    private ScriptedCommandRunner.Expectation expectResize(String key) {
        return node.commands.expect("cryptsetup resize", c -> c.argv().equals(List.of("cryptsetup", "resize",
                "--key-file=-", MAPPING)) && keyOnStdin(c, key));
    }

    @Test
    void anEncryptedVolumeGrowsItsDeviceThenItsMappingThenItsFilesystem() throws Exception {
        String staging = stageEncryptedFilesystem();
        node.block.sized(node.device.device(), 2L << 30);
        node.machine.clearActions();
        List<String> order = new java.util.ArrayList<>();
        expectResize(KEY).andDo(c -> {
            order.add("refreshed before cryptsetup resize: "
                    + node.transport.calls().stream().anyMatch(call -> call.startsWith("refresh")));
            node.block.sized(mapped, (2L << 30) - (16L << 20));
        }).succeeds("");

        assertEquals((2L << 30) - (16L << 20), expand(staging, new Secrets(Map.of("encryptionPassphrase", KEY))));

        assertEquals(List.of("refreshed before cryptsetup resize: true"), order);
        assertEquals(List.of("resize ext4 " + OPENED + " at " + staging + " to " + (((2L << 30) - (16L << 20)) / 4096)
                + " blocks"), node.machine.actions(), "the filesystem on the mapping, to the mapping's size");
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, staging));
    }

    @Test
    void anEncryptedVolumeWithoutTheExpandSecretIsRefusedBeforeAnythingGrows() throws Exception {
        String staging = stageEncryptedFilesystem();

        VolumeException refused = assertThrows(VolumeException.class, () -> expand(staging, Secrets.NONE));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(refused.getMessage().contains("node-expand secret"), refused.getMessage());
        assertFalse(node.transport.calls().stream().anyMatch(c -> c.startsWith("refresh")), "nothing grown");
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, staging));
    }

    @Test
    void aWrongExpandPassphraseLeavesTheMappingAndFilesystemAsTheyWere() throws Exception {
        String staging = stageEncryptedFilesystem();
        node.block.sized(node.device.device(), 2L << 30);
        node.machine.clearActions();
        expectResize("wrong-key").fails(2, "No key available with this passphrase.");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> expand(staging, new Secrets(Map.of("encryptionPassphrase", "wrong-key"))));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("encryptionPassphrase")
                && refused.getMessage().contains("not grown"), refused.getMessage());
        assertFalse(refused.getMessage().contains("wrong-key"), refused.getMessage());
        assertEquals(List.of(), node.machine.actions(), "the filesystem was not grown");
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, staging));
    }

    @Test
    void aMappingThatIsGoneIsAHealthProblem() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck(KEY).succeeds("");
        expectOpen();
        node.volumes.stage(request(block(), KEY));
        String staging = node.staging(VOLUME).toString();
        assertEquals(List.of(), node.volumes.health(new Requests.Health(VOLUME, "", staging)));

        node.sysfs.removeMap("dm-" + OPENED.minor()); // dmsetup remove --force behind the plugin's back

        List<HealthProblem> problems = node.volumes.health(new Requests.Health(VOLUME, "", staging));
        assertFalse(problems.isEmpty(), "a gone mapping is abnormal");
        assertTrue(problems.getFirst().message().contains(mapped.toString()), problems.toString());

        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, staging));
    }

    @Test
    void theKeyIsTheCommandsStandardInputByteForByte() throws Exception {
        node.expectProbe(node.device).returns(0, LUKS_FOUND, "");
        expectCheck(KEY).succeeds("");
        expectOpen();
        node.volumes.stage(request(block(), KEY));
        for (Command call : node.commands.calls()) {
            if (call.program().equals("cryptsetup")) {
                assertTrue(call.argv().contains("--key-file=-"), call.toString());
                assertArrayEquals(KEY.getBytes(StandardCharsets.UTF_8), call.stdin());
            }
        }
        expectClose();
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
    }
}
