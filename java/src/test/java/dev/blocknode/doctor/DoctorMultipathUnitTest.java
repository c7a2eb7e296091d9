package dev.blocknode.doctor;

import dev.blocknode.multipath.MultipathConfig;
import dev.blocknode.os.AbstractSockets;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.blocknode.doctor.DoctorFixture.assertFinding;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The multipath checks over a fabricated host: multipathd, and the effective settings that decide maps and I/O. */
class DoctorMultipathUnitTest {

    /** What multipathd show config prints, cut to what the checks read (and a built-in entry that queues). */
    private static final String SHOWN = """
            defaults {
            	verbosity 2
            	find_multipaths "strict"
            	user_friendly_names "yes"
            	no_path_retry "fail"
            }
            blacklist {
            	devnode "!^(sd[a-z]|dasd[a-z]|nvme[0-9])"
            	device {
            		vendor "DGC"
            		product "LUNZ"
            	}
            }
            blacklist_exceptions {
            	property "(SCSI_IDENT_|ID_WWN)"
            }
            devices {
            	device {
            		vendor "NETAPP"
            		product "LUN"
            		no_path_retry "queue"
            	}
            }
            overrides {
            }
            """;

    @TempDir
    Path temp;

    private DoctorFixture node;

    @BeforeEach
    void host() throws Exception {
        node = new DoctorFixture(temp);
    }

    private TransportReadiness withDaemonShowing(String config) throws Exception {
        node.unixSockets(AbstractSockets.MULTIPATHD);
        Files.createDirectories(node.paths().multipathWwids().getParent());
        node.commands.expect("multipathd", "show", "config").succeeds(config);
        TransportReadiness multipath = node.examine(TransportReadiness.MULTIPATH);
        assertEquals(MultipathReadiness.SHOW_CONFIG_TIMEOUT, node.commands.calls().getFirst().timeout());
        return multipath;
    }

    @Test
    void anEmptyConfigFileIsNotSetUp() throws Exception {
        node.etc("multipath.conf", "\n"); // what the chart's FileOrCreate leaves on a host without multipath
        Files.createDirectories(node.paths().multipathWwids().getParent());
        TransportReadiness multipath = node.examine(TransportReadiness.MULTIPATH);
        assertTrue(multipath.notSetUp().isPresent(), multipath::toString);
    }

    @Test
    void theDaemonsUsualSettingsAreOk() throws Exception {
        TransportReadiness multipath = withDaemonShowing(SHOWN);
        assertFinding(multipath, "multipathd", Severity.OK);
        assertFinding(multipath, "find-multipaths", Severity.OK, "strict", "multipath -a");
        assertFinding(multipath, "blacklist", Severity.OK);
        assertFinding(multipath, "user-friendly-names", Severity.OK, "yes", "by its WWID");
        // The built-in NETAPP entry queues, but it is the daemon's table, not this node's choice.
        assertFinding(multipath, "no-path-retry", Severity.OK, "fail");
        assertEquals(Severity.OK, multipath.worst());
    }

    @Test
    void findMultipathsStrictWithoutAWritableWwidsDirectoryIsAnError() throws Exception {
        node.unixSockets(AbstractSockets.MULTIPATHD);
        node.commands.expect("multipathd", "show", "config").succeeds(SHOWN);
        Finding finding = assertFinding(node.examine(TransportReadiness.MULTIPATH), "find-multipaths",
                Severity.ERROR, "strict", "never appears");
        assertTrue(finding.fix().contains("/etc/multipath"), finding::fix);
    }

    @Test
    void findMultipathsNoNeedsNoWwidsFile() throws Exception {
        node.unixSockets(AbstractSockets.MULTIPATHD);
        node.commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"off\"\n}\n");
        assertFinding(node.examine(TransportReadiness.MULTIPATH), "find-multipaths", Severity.OK, "off",
                "not consulted");
    }

    @Test
    void aBlacklistOfEveryScsiDiskIsAnError() throws Exception {
        Finding finding = assertFinding(withDaemonShowing("blacklist {\n\tdevnode \".*\"\n}\n"), "blacklist",
                Severity.ERROR, "devnode \".*\"", "no iSCSI or FC LUN");
        assertTrue(finding.fix().contains("blacklist_exceptions"));
    }

    @Test
    void everyBlacklistShapeThatHidesAllIsFound() throws Exception {
        for (String blacklist : List.of("wwid \".*\"", "devnode \"^sd[a-z]+\"",
                "device {\n vendor \".*\"\n product \".*\"\n}", "device {\n vendor \".*\"\n}")) {
            node = new DoctorFixture(Files.createTempDirectory(temp, "node"));
            assertFinding(withDaemonShowing("blacklist {\n" + blacklist + "\n}\n"), "blacklist", Severity.ERROR);
        }
    }

    @Test
    void aBlacklistOfAllButTheExceptionsIsAWarning() throws Exception {
        assertFinding(withDaemonShowing("""
                blacklist {
                	wwid ".*"
                }
                blacklist_exceptions {
                	property "(SCSI_IDENT_|ID_WWN)"
                	wwid "3600a098038303053453f463045727a4d"
                }
                """), "blacklist", Severity.WARNING, "blacklist_exceptions");
    }

    @Test
    void aPropertyExceptionRescuesNothing() throws Exception {
        assertFinding(withDaemonShowing("blacklist {\n\tdevnode \"sd\"\n}\nblacklist_exceptions {\n"
                + "\tproperty \"(SCSI_IDENT_|ID_WWN)\"\n}\n"), "blacklist", Severity.ERROR);
    }

    @Test
    void queueingInTheDefaultsIsAWarning() throws Exception {
        Finding finding = assertFinding(withDaemonShowing("defaults {\n\tno_path_retry \"queue\"\n}\n"),
                "no-path-retry", Severity.WARNING, "for ever", "defaults");
        assertTrue(finding.fix().contains("no_path_retry"), finding::fix);
    }

    /** 12 x 5 s is a minute: less than two default repair intervals (2 x 30 s) and a repair (30 s). */
    @Test
    void queueingShorterThanTwoRepairIntervalsAndARepairIsAWarning() throws Exception {
        Finding finding = assertFinding(withDaemonShowing("defaults {\n\tpolling_interval 5\n\tno_path_retry 12\n}\n"),
                "no-path-retry", Severity.WARNING, "no_path_retry 12 (defaults)", "2 x 30 s", "the writes fail");
        assertTrue(finding.fix().contains("at least 18"), finding::fix);
    }

    @Test
    void queueingThatOutlastsTwoRepairIntervalsAndARepairIsFine() throws Exception {
        assertFinding(withDaemonShowing("defaults {\n\tpolling_interval 5\n\tno_path_retry 18\n}\n"),
                "no-path-retry", Severity.OK, "18");
    }

    @Test
    void aLongerPollingIntervalCountsEachRetryForMore() throws Exception {
        assertFinding(withDaemonShowing("defaults {\n\tpolling_interval 10\n\tno_path_retry 9\n}\n"),
                "no-path-retry", Severity.OK, "9");
    }

    @Test
    void aShortRepairIntervalNeedsLessQueueingAndNoLoopNone() throws Exception {
        String shown = "defaults {\n\tno_path_retry 12\n}\n";
        node.unixSockets(AbstractSockets.MULTIPATHD);
        Files.createDirectories(node.paths().multipathWwids().getParent());
        node.commands.expect("multipathd", "show", "config").succeeds(shown);
        assertFinding(node.examine(TransportReadiness.MULTIPATH, Duration.ofSeconds(10)), "no-path-retry",
                Severity.OK, "12"); // 60 s >= 2 x 10 s + 30 s
        node.commands.expect("multipathd", "show", "config").succeeds(shown);
        assertFinding(node.examine(TransportReadiness.MULTIPATH, Duration.ZERO), "no-path-retry", Severity.OK, "12");
    }

    @Test
    void queueIfNoPathInTheOverridesIsAWarning() throws Exception {
        assertFinding(withDaemonShowing("overrides {\n\tfeatures \"1 queue_if_no_path\"\n}\n"), "no-path-retry",
                Severity.WARNING, "overrides");
    }

    @Test
    void theNodesOwnDeviceSectionThatQueuesIsAWarning() throws Exception {
        node.etc("multipath.conf", """
                devices {
                    device {
                        vendor "LIO-ORG"   # the test array
                        product "TCMU device"
                        no_path_retry queue
                    }
                }
                """);
        assertFinding(withDaemonShowing(SHOWN), "no-path-retry", Severity.WARNING, "LIO-ORG TCMU device");
    }

    @Test
    void withoutTheDaemonTheFileIsReadAndTheDaemonIsAWarning() throws Exception {
        node.etc("multipath.conf", "defaults {\n    user_friendly_names no\n    find_multipaths yes\n}\n");
        Files.createDirectories(node.paths().multipathWwids().getParent());
        TransportReadiness multipath = node.examine(TransportReadiness.MULTIPATH);
        Finding daemon = assertFinding(multipath, "multipathd", Severity.WARNING, "not running");
        assertTrue(daemon.fix().contains("systemctl enable --now multipathd"));
        assertFinding(multipath, "find-multipaths", Severity.OK, "find_multipaths yes");
        assertFinding(multipath, "user-friendly-names", Severity.OK, "user_friendly_names no");
        assertTrue(node.commands.calls().isEmpty(), "no daemon to ask");
    }

    @Test
    void aDaemonThatDoesNotAnswerFallsBackToTheFile() throws Exception {
        node.etc("multipath.conf", "defaults {\n    find_multipaths off\n}\n").unixSockets(AbstractSockets.MULTIPATHD);
        node.commands.expect("multipathd", "show", "config").succeeds("fail\n");
        TransportReadiness multipath = node.examine(TransportReadiness.MULTIPATH);
        assertFinding(multipath, "show-config", Severity.WARNING);
        assertFinding(multipath, "find-multipaths", Severity.OK, "off");
    }

    @Test
    void theParserKeepsSectionsQuotesAndTheLastValue() {
        MultipathConfig.Section config = MultipathConfig.parse("""
                # a comment
                defaults {
                    polling_interval 5 ! another
                    find_multipaths yes
                    find_multipaths "smart"
                }
                blacklist {
                    devnode "!^(sd[a-z]|nvme[0-9])"  # negated
                }
                }
                """);
        MultipathConfig.Section defaults = config.sections("defaults").getFirst();
        assertEquals("5", defaults.value("polling_interval").orElseThrow());
        assertEquals("smart", defaults.value("find_multipaths").orElseThrow());
        assertEquals("!^(sd[a-z]|nvme[0-9])", config.sections("blacklist").getFirst().value("devnode").orElseThrow());
    }
}
