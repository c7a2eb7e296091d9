package dev.blocknode.config;


import dev.blocknode.logging.LogFormat;
import dev.blocknode.os.wait.DeviceWaitMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

import static java.nio.file.attribute.PosixFilePermission.GROUP_READ;
import static java.nio.file.attribute.PosixFilePermission.GROUP_WRITE;
import static java.nio.file.attribute.PosixFilePermission.OWNER_READ;
import static java.nio.file.attribute.PosixFilePermission.OWNER_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlagParserUnitTest {

    /** node-id is always given: its default is the host name, which this test cannot rely on. */
    private static PluginConfig parse(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "--node-id";
        all[1] = "node-1";
        System.arraycopy(args, 0, all, 2, args.length);
        return FlagParser.parse(all);
    }

    private static IllegalArgumentException refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> parse(args));
    }

    // ---- defaults and syntax ------------------------------------------------------------------

    @Test
    void theBuildersDefaultsAreTheFlagsDefaults() {
        // The four values the builder leaves to its caller are given as the flags' defaults make them.
        PluginConfig built = PluginConfig.builder().socket(Path.of("/csi/csi.sock")).nodeId("node-1")
                .kubeletRoot(Path.of("/var/lib/kubelet")).stateDir(Path.of("/var/lib/blocknode")).build();
        assertEquals(parse(), built);
    }

    @Test
    void theBuilderRefusesAConfigWithoutItsSocket() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> PluginConfig.builder()
                .nodeId("node-1").kubeletRoot(Path.of("/k")).stateDir(Path.of("/s")).build());
        assertEquals("socket", e.getMessage());
    }

    @Test
    void defaults() {
        PluginConfig config = parse();
        assertEquals(Path.of("/csi/csi.sock"), config.socket());
        assertEquals("node-1", config.nodeId());
        assertEquals(PluginConfig.DEFAULT_DRIVER_NAME, config.driverName());
        assertEquals("block.csi.blocknode.dev", config.driverName());
        assertEquals(Path.of("/var/lib/kubelet"), config.kubeletRoot());
        assertEquals(Path.of("/var/lib/blocknode"), config.stateDir());
        assertEquals(Optional.empty(), config.metricsAddress());
        assertEquals(LogFormat.JSON, config.logFormat());
        assertEquals(EnumSet.of(OWNER_READ, OWNER_WRITE, GROUP_READ, GROUP_WRITE), config.socketMode());
        assertEquals("rw-rw----", config.socketModeOctal());
        assertEquals(Optional.empty(), config.socketGroup());
        assertEquals(Duration.ofSeconds(30), config.shutdownGrace());
        assertEquals(0, config.maxVolumesPerNode());
        assertEquals("ext4", config.defaultFsType());
        assertEquals(DeviceWaitMode.EVENTS, config.deviceWait());
        assertEquals(Optional.empty(), config.devicePollInterval());
        assertFalse(config.demo());
        assertEquals(PluginMode.NODE, config.mode());
    }

    @Test
    void modeIsNodeOrControllerAndTheDemoNeedsANode() {
        assertEquals(PluginMode.CONTROLLER, parse("--mode", "controller").mode());
        assertEquals(PluginMode.NODE, parse("--mode=NODE").mode());
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> parse("--mode=both"));
        assertEquals("--mode must be node or controller, got \"both\"", unknown.getMessage());
        IllegalArgumentException demo = assertThrows(IllegalArgumentException.class,
                () -> parse("--mode=controller", "--demo"));
        assertTrue(demo.getMessage().contains("--mode node"), demo.getMessage());
    }

    @Test
    void logLevelIsInfoByDefaultAndDebugIsFine() {
        assertEquals(dev.blocknode.logging.LogLevel.INFO, parse().logLevel());
        assertEquals(dev.blocknode.logging.LogLevel.FINE, parse("--log-level=fine").logLevel());
        assertEquals(dev.blocknode.logging.LogLevel.FINE, parse("--log-level", "DEBUG").logLevel());
        assertEquals(dev.blocknode.logging.LogLevel.WARNING, parse("--log-level=warning").logLevel());
        assertEquals(dev.blocknode.logging.LogLevel.ERROR, parse("--log-level=error").logLevel());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> parse("--log-level=trace"));
        assertEquals("--log-level must be error, warning, info, fine or debug, got \"trace\"", bad.getMessage());
    }

    @Test
    void logLevelFileIsOffByDefault() {
        assertEquals(java.util.Optional.empty(), parse().logLevelFile());
        assertEquals(java.util.Optional.empty(), parse("--log-level-file=").logLevelFile());
        assertEquals(java.util.Optional.of(java.nio.file.Path.of("/etc/blocknode/log-level/level")),
                parse("--log-level-file", "/etc/blocknode/log-level/level").logLevelFile());
    }

    @Test
    void deviceWaitModeAndPollInterval() {
        PluginConfig config = parse("--device-wait=poll", "--device-poll-interval=1s");
        assertEquals(DeviceWaitMode.POLL, config.deviceWait());
        assertEquals(Optional.of(Duration.ofSeconds(1)), config.devicePollInterval());
        assertEquals(DeviceWaitMode.EVENTS, parse("--device-wait", "EVENTS").deviceWait());
    }

    @Test
    void theRepairLoopRunsEvery30SecondsUnlessToldOtherwiseAndZeroTurnsItOff() {
        assertEquals(Duration.ofSeconds(30), parse().repairInterval());
        assertEquals(Duration.ofSeconds(5), parse("--repair-interval=5s").repairInterval());
        assertEquals(Duration.ZERO, parse("--repair-interval=0").repairInterval());
        assertEquals(Duration.ZERO, parse("--repair-interval", "0s").repairInterval());
        assertThrows(IllegalArgumentException.class, () -> parse("--repair-interval=-5s"));
    }

    @Test
    void fencingIntervalsDefaultTo10And60SecondsAndTheTakeoverMustCoverThreeRenewals() {
        assertEquals(new PluginConfig.Fencing(Duration.ofSeconds(10), Duration.ofSeconds(60)), parse().fencing());
        PluginConfig.Fencing quick = parse("--fencing-renew-interval=2s", "--fencing-takeover-after=6s").fencing();
        assertEquals(Duration.ofSeconds(2), quick.renewInterval());
        assertEquals(Duration.ofSeconds(6), quick.takeoverAfter());

        IllegalArgumentException tooShort = assertThrows(IllegalArgumentException.class,
                () -> parse("--fencing-renew-interval=10s", "--fencing-takeover-after=29s"));
        assertTrue(tooShort.getMessage().startsWith("--fencing-takeover-after (29000 ms) must be at least 3 x"
                + " --fencing-renew-interval (10000 ms)"), tooShort.getMessage());
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> parse("--fencing-renew-interval=0s"));
        assertTrue(zero.getMessage().startsWith("--fencing-renew-interval must be more than zero"), zero.getMessage());
    }

    @Test
    void badDeviceWaitValuesAreRefusedNamingTheFlag() {
        IllegalArgumentException mode = assertThrows(IllegalArgumentException.class,
                () -> parse("--device-wait=udev"));
        assertEquals("--device-wait must be events or poll, got \"udev\"", mode.getMessage());
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> parse("--device-poll-interval=0s"));
        assertTrue(zero.getMessage().startsWith("--device-poll-interval must be more than zero"), zero.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> parse("--device-poll-interval=often"));
        assertTrue(bad.getMessage().startsWith("--device-poll-interval must be a duration"), bad.getMessage());
    }

    @Test
    void equalsFormAndSpaceFormGiveTheSameConfig() {
        PluginConfig withEquals = FlagParser.parse(new String[]{
                "--endpoint=unix:///run/x/csi.sock", "--node-id=n7", "--driver-name=fc.example.com",
                "--kubelet-root=/k", "--state-dir=/s", "--metrics-address=127.0.0.1:9808", "--log-format=text",
                "--socket-mode=0600", "--socket-group=csi", "--shutdown-grace=2m", "--max-volumes-per-node=12",
                "--default-fs-type=xfs", "--device-wait=poll", "--device-poll-interval=0.5s", "--demo"});
        PluginConfig withSpaces = FlagParser.parse(new String[]{
                "--endpoint", "unix:///run/x/csi.sock", "--node-id", "n7", "--driver-name", "fc.example.com",
                "--kubelet-root", "/k", "--state-dir", "/s", "--metrics-address", "127.0.0.1:9808", "--log-format",
                "text", "--socket-mode", "0600", "--socket-group", "csi", "--shutdown-grace", "2m",
                "--max-volumes-per-node", "12", "--default-fs-type", "xfs", "--device-wait", "poll",
                "--device-poll-interval", "0.5s", "--demo"});
        assertEquals(withEquals, withSpaces);
        assertEquals(Path.of("/run/x/csi.sock"), withEquals.socket());
        assertEquals("n7", withEquals.nodeId());
        assertEquals("fc.example.com", withEquals.driverName());
        assertEquals(Path.of("/k"), withEquals.kubeletRoot());
        assertEquals(Path.of("/s"), withEquals.stateDir());
        assertEquals(Optional.of("127.0.0.1:9808"), withEquals.metricsAddress());
        assertEquals(LogFormat.TEXT, withEquals.logFormat());
        assertEquals(EnumSet.of(OWNER_READ, OWNER_WRITE), withEquals.socketMode());
        assertEquals(Optional.of("csi"), withEquals.socketGroup());
        assertEquals(Duration.ofMinutes(2), withEquals.shutdownGrace());
        assertEquals(12, withEquals.maxVolumesPerNode());
        assertEquals("xfs", withEquals.defaultFsType());
        assertEquals(DeviceWaitMode.POLL, withEquals.deviceWait());
        assertEquals(Optional.of(Duration.ofMillis(500)), withEquals.devicePollInterval());
        assertTrue(withEquals.demo());
    }

    @Test
    void valueAfterEqualsMayItselfContainEquals() {
        assertEquals(Optional.of("a=b"), parse("--socket-group=a=b").socketGroup());
    }

    @Test
    void demoTakesNoValueButAcceptsAnExplicitOne() {
        assertTrue(parse("--demo", "--log-format", "text").demo());
        assertEquals(LogFormat.TEXT, parse("--demo", "--log-format", "text").logFormat());
        assertFalse(parse("--demo=false").demo());
        assertTrue(parse("--demo=true").demo());
    }

    @Test
    void blankOptionalValuesCountAsAbsent() {
        assertEquals(Optional.empty(), parse("--metrics-address=").metricsAddress());
        assertEquals(Optional.empty(), parse("--socket-group", "  ").socketGroup());
    }

    @Test
    void unknownFlagIsNamed() {
        IllegalArgumentException e = refused("--no-such-flag=1");
        assertTrue(e.getMessage().contains("--no-such-flag"), e.getMessage());
        assertTrue(e.getMessage().contains("unknown flag"), e.getMessage());
    }

    @Test
    void unknownFlagInSpaceFormIsNamedAndItsValueIsConsumed() {
        IllegalArgumentException e = refused("--endpont", "unix:///x.sock");
        assertTrue(e.getMessage().contains("--endpont"), e.getMessage());
    }

    @Test
    void positionalArgumentIsRefused() {
        IllegalArgumentException e = refused("stray");
        assertTrue(e.getMessage().contains("\"stray\""), e.getMessage());
    }

    @Test
    void singleDashFlagIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> parse("-endpoint=/x.sock"));
    }

    @Test
    void flagWithoutValueAtTheEndIsRefused() {
        IllegalArgumentException e = refused("--endpoint");
        assertTrue(e.getMessage().contains("--endpoint"), e.getMessage());
        assertTrue(e.getMessage().contains("needs a value"), e.getMessage());
    }

    // ---- endpoint -----------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"unix:///var/lib/kubelet/plugins/x/csi.sock", "unix:/var/lib/kubelet/plugins/x/csi.sock",
            "/var/lib/kubelet/plugins/x/csi.sock"})
    void endpointForms(String endpoint) {
        assertEquals(Path.of("/var/lib/kubelet/plugins/x/csi.sock"), parse("--endpoint", endpoint).socket());
    }

    @ParameterizedTest
    @ValueSource(strings = {"unix://relative/csi.sock", "unix:relative/csi.sock", "relative/csi.sock", "csi.sock",
            "tcp://127.0.0.1:10000", "", "unix://", "unix:"})
    void relativeOrNonUnixEndpointIsRefused(String endpoint) {
        IllegalArgumentException e = refused("--endpoint=" + endpoint);
        assertTrue(e.getMessage().contains("--endpoint"), e.getMessage());
    }

    @Test
    void socketPathOf107BytesIsAcceptedAnd108Refused() {
        String ok = "/" + "a".repeat(106);
        assertEquals(107, ok.length());
        assertEquals(Path.of(ok), parse("--endpoint", "unix://" + ok).socket());
        String tooLong = "/" + "a".repeat(107);
        IllegalArgumentException e = refused("--endpoint", "unix://" + tooLong);
        assertTrue(e.getMessage().contains("107"), e.getMessage());
    }

    @Test
    void socketPathLengthIsCountedInUtf8Bytes() {
        // 1 + 53 * 2 = 107 bytes: fits; one more two-byte character does not, though only 55 characters long.
        String fits = "/" + "é".repeat(53);
        assertEquals(Path.of(fits), FlagParser.socketPath(fits));
        String tooLong = "/" + "é".repeat(54);
        assertThrows(IllegalArgumentException.class, () -> FlagParser.socketPath(tooLong));
    }

    // ---- driver name --------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"a", "Z9", "block.csi.blocknode.dev", "a-b.c-d", "a--b", "a..b", "1.2.3"})
    void validDriverNames(String name) {
        assertEquals(name, parse("--driver-name", name).driverName());
    }

    @Test
    void driverNameOf63CharactersIsAcceptedAnd64Refused() {
        String max = "a" + "-".repeat(61) + "b";
        assertEquals(63, max.length());
        assertEquals(max, FlagParser.driverName(max));
        String tooLong = "a".repeat(64);
        assertThrows(IllegalArgumentException.class, () -> FlagParser.driverName(tooLong));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "-abc", "abc-", ".abc", "abc.", "a_b", "a b", "ä", "abc\n", "a/b", "."})
    void invalidDriverNamesAreRefusedNamingTheFlag(String name) {
        IllegalArgumentException e = refused("--driver-name=" + name);
        assertTrue(e.getMessage().contains("--driver-name"), e.getMessage());
    }

    // ---- socket mode --------------------------------------------------------------------------

    @Test
    void socketMode0660() {
        assertEquals(PosixFilePermissions.fromString("rw-rw----"), FlagParser.socketMode("0660"));
    }

    @Test
    void socketMode0600() {
        assertEquals(PosixFilePermissions.fromString("rw-------"), FlagParser.socketMode("0600"));
    }

    @Test
    void socketMode0777() {
        assertEquals(EnumSet.allOf(PosixFilePermission.class), FlagParser.socketMode("0777"));
    }

    @Test
    void socketModeEveryBitMapsToItsPermission() {
        assertEquals(PosixFilePermissions.fromString("r-x-w---x"), FlagParser.socketMode("0521"));
        assertEquals(PosixFilePermissions.fromString("-w-r----x"), FlagParser.socketMode("0241"));
        assertEquals(Set.of(), FlagParser.socketMode("0000"));
        assertEquals(Set.of(), FlagParser.socketMode("0"));
        assertEquals(FlagParser.socketMode("0660"), FlagParser.socketMode("660"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"0999", "abc", "", "0o660", "1000", "7777", "-1", "0x1ff", "06 60"})
    void badSocketModeIsRefusedNamingTheFlag(String mode) {
        IllegalArgumentException e = refused("--socket-mode=" + mode);
        assertTrue(e.getMessage().contains("--socket-mode"), e.getMessage());
    }

    // ---- durations ----------------------------------------------------------------------------

    @Test
    void durations() {
        assertEquals(Duration.ofSeconds(30), FlagParser.duration("shutdown-grace", "30s"));
        assertEquals(Duration.ofMinutes(2), FlagParser.duration("shutdown-grace", "2m"));
        assertEquals(Duration.ofSeconds(90), FlagParser.duration("shutdown-grace", "1m30s"));
        assertEquals(Duration.ofHours(1), FlagParser.duration("shutdown-grace", "1h"));
        assertEquals(Duration.ofSeconds(30), FlagParser.duration("shutdown-grace", "30S"));
        assertEquals(Duration.ZERO, FlagParser.duration("shutdown-grace", "0s"));
        assertEquals(Duration.ofSeconds(45), parse("--shutdown-grace", "45s").shutdownGrace());
    }

    @ParameterizedTest
    @ValueSource(strings = {"30", "abc", "", "1d", "30 s", "s", "PT30S", "500ms"})
    void badDurationIsRefusedNamingTheFlag(String value) {
        IllegalArgumentException e = refused("--shutdown-grace=" + value);
        assertTrue(e.getMessage().contains("--shutdown-grace"), e.getMessage());
        assertTrue(e.getMessage().contains("\"" + value + "\""), e.getMessage());
    }

    @Test
    void negativeShutdownGraceIsRefused() {
        IllegalArgumentException e = refused("--shutdown-grace=-5s");
        assertTrue(e.getMessage().contains("--shutdown-grace"), e.getMessage());
    }

    // ---- log format, fs type, numbers, node id --------------------------------------------------

    @Test
    void logFormats() {
        assertEquals(LogFormat.JSON, parse("--log-format=json").logFormat());
        assertEquals(LogFormat.TEXT, parse("--log-format=text").logFormat());
        assertEquals(LogFormat.TEXT, parse("--log-format=TEXT").logFormat());
    }

    @ParameterizedTest
    @ValueSource(strings = {"xml", "", "logfmt", "json "})
    void badLogFormatIsRefusedNamingTheFlag(String value) {
        IllegalArgumentException e = refused("--log-format=" + value);
        assertTrue(e.getMessage().contains("--log-format"), e.getMessage());
    }

    @Test
    void defaultFsType() {
        assertEquals("ext4", parse("--default-fs-type", "ext4").defaultFsType());
        assertEquals("xfs", parse("--default-fs-type", "xfs").defaultFsType());
    }

    @Test
    void fsckPreensByDefaultAndIsTurnedOffNodeWide() {
        assertTrue(parse().fsck());
        assertTrue(parse("--fsck", "preen").fsck());
        assertFalse(parse("--fsck=off").fsck());
        assertTrue(refused("--fsck=full").getMessage().contains("--fsck must be preen or off"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"btrfs", "ext3", "", "vfat"})
    void unsupportedDefaultFsTypeIsRefused(String value) {
        IllegalArgumentException e = refused("--default-fs-type=" + value);
        assertTrue(e.getMessage().contains("--default-fs-type"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "x", "", "1.5", "99999999999999999999"})
    void badMaxVolumesIsRefused(String value) {
        IllegalArgumentException e = refused("--max-volumes-per-node=" + value);
        assertTrue(e.getMessage().contains("--max-volumes-per-node"), e.getMessage());
    }

    @Test
    void nodeIdLength() {
        String max = "n".repeat(256);
        assertEquals(max, FlagParser.parse(new String[]{"--node-id", max}).nodeId());
        assertThrows(IllegalArgumentException.class,
                () -> FlagParser.parse(new String[]{"--node-id", "n".repeat(257)}));
        assertThrows(IllegalArgumentException.class, () -> FlagParser.parse(new String[]{"--node-id="}));
        assertThrows(IllegalArgumentException.class, () -> FlagParser.parse(new String[]{"--node-id", "   "}));
    }

    @Test
    void usageNamesTheDefaultDriverAndEveryFlag() {
        assertTrue(FlagParser.USAGE.contains(PluginConfig.DEFAULT_DRIVER_NAME));
        for (String flag : new String[]{"--endpoint", "--node-id", "--driver-name", "--kubelet-root", "--state-dir",
                "--metrics-address", "--log-format", "--socket-mode", "--socket-group", "--shutdown-grace",
                "--max-volumes-per-node", "--default-fs-type", "--demo", "--topology"}) {
            assertTrue(FlagParser.USAGE.contains(flag), flag);
        }
    }

    // ---- --topology ------------------------------------------------------------------------------

    @Test
    void topologySegmentsAreParsed() {
        assertEquals(java.util.Map.of("topology.blocknode.dev/fabric", "fab-a", "site", "Rack_1.b"),
                parse("--topology", "topology.blocknode.dev/fabric=fab-a, site=Rack_1.b").topology());
        assertEquals(java.util.Map.of("topology.blocknode.dev/fabric", "fab-a"),
                parse("--topology=topology.blocknode.dev/fabric=fab-a").topology());
        assertEquals(java.util.Map.of(), parse("--topology=").topology(), "empty: no topology, as without the flag");
        String longest = "p".repeat(63) + "." + "q".repeat(63) + "." + "r".repeat(63) + "." + "s".repeat(61)
                + "/" + "n".repeat(63);
        assertEquals(253, longest.indexOf('/'));
        assertEquals("v".repeat(63), parse("--topology", longest + "=" + "v".repeat(63)).topology().get(longest));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "fabric",                                  // no "="
            "fabric=",                                 // empty value: CSI wants one character at least
            "=fab-a",                                  // empty key
            "fabric=fab a",                            // space inside a value
            "fabric=-fab",                             // value must start with an alphanumeric
            "fabric=fab.",                             // ... and end with one
            "fab/ric/x=a",                             // two slashes
            "Topology.Blocknode.dev/fabric=a",         // uppercase prefix is no DNS subdomain
            "topology..blocknode.dev/fabric=a",        // empty DNS label
            "/fabric=a",                               // empty prefix
            "topology.blocknode.dev/=a",               // empty name
            "kubernetes.io/fabric=a",                  // reserved
            "topology.kubernetes.io/zone=a",           // reserved (NodeRestriction)
            "node.k8s.io/fabric=a",                    // reserved
            "fabric=a,fabric=b",                       // a key twice
            "fabric=a,,site=b",                        // an empty pair
    })
    void badTopologyIsRefusedNamingTheFlag(String value) {
        IllegalArgumentException e = refused("--topology", value);
        assertTrue(e.getMessage().startsWith("--topology"), e.getMessage());
    }

    @Test
    void topologyLimitsAreTheLabelLimits() {
        refused("--topology", "n".repeat(64) + "=a");
        refused("--topology", "fabric=" + "v".repeat(64));
        refused("--topology", "p".repeat(64) + ".dev/fabric=a");            // a DNS label of 64
        String prefix254 = "p".repeat(63) + "." + "q".repeat(63) + "." + "r".repeat(63) + "." + "s".repeat(62);
        refused("--topology", prefix254 + "/fabric=a");
    }

    @Test
    void topologyNeedsNodeMode() {
        IllegalArgumentException e = refused("--mode", "controller", "--topology", "site=a");
        assertTrue(e.getMessage().contains("--mode node"), e.getMessage());
    }
}
