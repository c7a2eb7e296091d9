package dev.blocknode.doctor;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.metrics.MetricsEndpoint;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The plugin's run of the doctor at start: each problem logged once, every finding a gauge row. */
class DoctorAtStartUnitTest {

    private static final DoctorReport REPORT = new DoctorReport(List.of(
            TransportReadiness.notSetUp(TransportReadiness.FC, "no Fibre Channel HBA"),
            TransportReadiness.of(TransportReadiness.ISCSI, List.of(
                    Finding.ok("initiator-name", "initiator name iqn.2026-11.dev.blocknode:n1"),
                    Finding.error("iscsid", "iscsid is not running on the host", "systemctl enable --now iscsid"))),
            TransportReadiness.of(TransportReadiness.KERNEL, List.of(
                    Finding.warning("openat2", "ENOSYS", "run a newer kernel"),
                    Finding.ok("uevent-socket", "ok")))));

    @Test
    void problemsAreLoggedOnceAndEveryFindingIsExported() {
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        DoctorAtStart doctor = new DoctorAtStart(registry);
        List<String> warnings;
        try (LogCapture log = LogCapture.installed()) {
            doctor.record(REPORT);
            warnings = log.written().stream().filter(w -> w.level() == Level.WARNING && w.text().contains("doctor:"))
                    .map(LogCapture.Written::text).toList();
        }
        assertEquals(2, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains("error in iscsi (iscsid): iscsid is not running on the host; fix: "
                + "systemctl enable --now iscsid"), warnings.get(0));
        String text = registry.scrape();
        assertTrue(text.contains("blocknode_doctor_findings{check=\"iscsid\",severity=\"error\",transport=\"iscsi\"}"
                + " 1"), text);
        assertTrue(text.contains("blocknode_doctor_findings{check=\"openat2\",severity=\"warning\","
                + "transport=\"kernel\"} 1"), text);
        assertTrue(text.contains("blocknode_doctor_findings{check=\"initiator-name\",severity=\"ok\","
                + "transport=\"iscsi\"} 1"), text);
        assertFalse(text.contains("transport=\"fc\""), "a transport not set up has no finding");
    }
}
