package dev.blocknode.volume.filesystem;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeviceProbeUnitTest {

    /** Answers every command with one scripted result and remembers what was asked. */
    private static final class ScriptedRunner implements CommandRunner {
        final CommandResult answer;
        final List<Command> ran = new ArrayList<>();

        ScriptedRunner(CommandResult answer) {
            this.answer = answer;
        }

        @Override
        public CommandResult run(Command command) {
            ran.add(command);
            return answer;
        }
    }

    @TempDir
    Path temp;

    // ---- classify -------------------------------------------------------------------------------

    @Test
    void ext4Filesystem() {
        assertEquals(new DeviceContent.Filesystem("ext4"), DeviceProbe.classify(Map.of(
                "DEVNAME", "/dev/sdb", "UUID", "0c1f3b5e-aaaa-bbbb-cccc-0123456789ab", "VERSION", "1.0",
                "BLOCK_SIZE", "4096", "TYPE", "ext4", "USAGE", "filesystem")));
    }

    @Test
    void xfsFilesystem() {
        assertEquals(new DeviceContent.Filesystem("xfs"),
                DeviceProbe.classify(Map.of("TYPE", "xfs", "USAGE", "filesystem", "BLOCK_SIZE", "512")));
    }

    @Test
    void partitionTables() {
        assertEquals(new DeviceContent.PartitionTable("gpt"), DeviceProbe.classify(Map.of(
                "DEVNAME", "/dev/sdc", "PTUUID", "5c1b0b3a-1111-2222-3333-444455556666", "PTTYPE", "gpt")));
        assertEquals(new DeviceContent.PartitionTable("dos"),
                DeviceProbe.classify(Map.of("PTUUID", "a1b2c3d4", "PTTYPE", "dos")));
    }

    @Test
    void filesystemWinsOverAPartitionTableSignature() {
        // A hybrid ISO carries both; what matters is that it is a filesystem, never blank.
        assertEquals(new DeviceContent.Filesystem("iso9660"), DeviceProbe.classify(Map.of(
                "TYPE", "iso9660", "USAGE", "filesystem", "PTTYPE", "dos")));
    }

    @Test
    void lvmMemberIsAnotherSignature() {
        DeviceContent content = DeviceProbe.classify(Map.of("TYPE", "LVM2_member", "USAGE", "raid",
                "VERSION", "LVM2 001", "UUID", "abc"));
        assertEquals(new DeviceContent.OtherSignature("LVM2_member (raid)"), content);
    }

    @Test
    void luksIsAnotherSignature() {
        assertEquals(new DeviceContent.OtherSignature("crypto_LUKS (crypto)"),
                DeviceProbe.classify(Map.of("TYPE", "crypto_LUKS", "USAGE", "crypto", "VERSION", "2")));
    }

    @Test
    void swapIsAnotherSignature() {
        assertEquals(new DeviceContent.OtherSignature("swap (other)"),
                DeviceProbe.classify(Map.of("TYPE", "swap", "USAGE", "other", "VERSION", "1")));
    }

    @Test
    void typeWithoutUsageIsAnotherSignatureNotAFilesystem() {
        assertEquals(new DeviceContent.OtherSignature("ext4"), DeviceProbe.classify(Map.of("TYPE", "ext4")));
    }

    @Test
    void emptyTagsAreAnUnrecognisedSignatureNeverBlank() {
        DeviceContent content = DeviceProbe.classify(Map.of());
        assertInstanceOf(DeviceContent.OtherSignature.class, content);
        assertTrue(((DeviceContent.OtherSignature) content).description().contains("unrecognised"),
                content.toString());
    }

    @Test
    void unrelatedTagsAloneAreUnrecognised() {
        assertInstanceOf(DeviceContent.OtherSignature.class,
                DeviceProbe.classify(Map.of("DEVNAME", "/dev/sdb", "PART_ENTRY_TYPE", "0x83")));
    }

    // ---- parseExport ----------------------------------------------------------------------------

    @Test
    void parseExportOfRealBlkidOutput() {
        String output = """
                DEVNAME=/dev/loop3
                UUID=0c1f3b5e-aaaa-bbbb-cccc-0123456789ab
                VERSION=1.0
                BLOCK_SIZE=4096
                TYPE=ext4
                USAGE=filesystem
                """;
        assertEquals(Map.of("DEVNAME", "/dev/loop3", "UUID", "0c1f3b5e-aaaa-bbbb-cccc-0123456789ab",
                "VERSION", "1.0", "BLOCK_SIZE", "4096", "TYPE", "ext4", "USAGE", "filesystem"),
                DeviceProbe.parseExport(output));
    }

    @Test
    void parseExportKeepsEqualsInsideValuesAndSkipsOddLines() {
        Map<String, String> tags = DeviceProbe.parseExport("LABEL=a=b\n\nno equals here\n=orphan\n TYPE = xfs \r\n");
        assertEquals(Map.of("LABEL", "a=b", "TYPE", "xfs"), tags);
    }

    @Test
    void parseExportOfNothing() {
        assertEquals(Map.of(), DeviceProbe.parseExport(""));
    }

    @Test
    void parseThenClassify() {
        assertEquals(new DeviceContent.PartitionTable("gpt"),
                DeviceProbe.classify(DeviceProbe.parseExport("DEVNAME=/dev/sdb\nPTUUID=x\nPTTYPE=gpt\n")));
    }

    // ---- probe with a scripted blkid --------------------------------------------------------------

    @Test
    void probeRunsALowLevelBlkidWithoutCache() throws IOException {
        ScriptedRunner runner = new ScriptedRunner(new CommandResult(0, "TYPE=xfs\nUSAGE=filesystem\n", ""));
        Path device = temp.resolve("dev");
        assertEquals(new DeviceContent.Filesystem("xfs"), new DeviceProbe(runner).probe(device));
        assertEquals(1, runner.ran.size());
        Command blkid = runner.ran.get(0);
        assertEquals(List.of("blkid", "-p", "-o", "export", device.toString()), blkid.argv());
        assertEquals(Duration.ofSeconds(60), blkid.timeout());
    }

    @Test
    void nothingFoundAndZeroHeadIsBlank() throws IOException {
        Path device = temp.resolve("zeros");
        try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rw")) {
            f.setLength(4L << 20);
        }
        DeviceContent content = new DeviceProbe(new ScriptedRunner(new CommandResult(2, "", ""))).probe(device);
        assertEquals(new DeviceContent.Blank(), content);
        assertEquals("nothing (blank)", content.describe());
    }

    @Test
    void nothingFoundOnAShortZeroDeviceIsBlank() throws IOException {
        Path device = Files.write(temp.resolve("short"), new byte[4096]);
        assertEquals(new DeviceContent.Blank(),
                new DeviceProbe(new ScriptedRunner(new CommandResult(2, "", ""))).probe(device));
    }

    @Test
    void nothingFoundButDataInTheHeadIsUnknownData() throws IOException {
        Path device = temp.resolve("data");
        try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rw")) {
            f.setLength(4L << 20);
            f.seek(DeviceProbe.HEAD_BYTES - 1);
            f.write(1);
        }
        assertEquals(new DeviceContent.UnknownData(),
                new DeviceProbe(new ScriptedRunner(new CommandResult(2, "", ""))).probe(device));
    }

    @Test
    void dataBeyondTheHeadIsNotLookedAt() throws IOException {
        Path device = temp.resolve("late-data");
        try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rw")) {
            f.setLength(4L << 20);
            f.seek(DeviceProbe.HEAD_BYTES);
            f.write(1);
        }
        assertEquals(new DeviceContent.Blank(),
                new DeviceProbe(new ScriptedRunner(new CommandResult(2, "", ""))).probe(device));
    }

    @Test
    void ambiguousIsAnotherSignature() throws IOException {
        DeviceContent content = new DeviceProbe(new ScriptedRunner(new CommandResult(8, "", "")))
                .probe(temp.resolve("x"));
        assertInstanceOf(DeviceContent.OtherSignature.class, content);
        assertTrue(content.describe().contains("ambiguous"), content.describe());
    }

    @Test
    void otherBlkidFailureIsACommandException() {
        CommandException e = assertThrows(CommandException.class,
                () -> new DeviceProbe(new ScriptedRunner(new CommandResult(4, "", "blkid: usage error")))
                        .probe(temp.resolve("x")));
        assertTrue(e.getMessage().contains("exited 4"), e.getMessage());
        assertTrue(e.getMessage().contains("usage error"), e.getMessage());
    }

    @Test
    void nothingFoundOnAMissingDeviceIsAnIOExceptionNotBlank() {
        assertThrows(IOException.class,
                () -> new DeviceProbe(new ScriptedRunner(new CommandResult(2, "", ""))).probe(temp.resolve("gone")));
    }

    @Test
    void describeNamesEachKind() {
        // The article ("a"/"an") is wording; the kind and the name are what an operator needs.
        assertTrue(new DeviceContent.Filesystem("ext4").describe().endsWith(" ext4 filesystem"));
        assertTrue(new DeviceContent.PartitionTable("gpt").describe().endsWith(" gpt partition table"));
        assertTrue(new DeviceContent.OtherSignature("swap (other)").describe().endsWith(" swap (other) signature"));
        assertTrue(new DeviceContent.UnknownData().describe().contains("unknown"));
    }
}
