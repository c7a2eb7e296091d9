package dev.blocknode.doctor;

import java.util.List;

/** Every transport's readiness, in a fixed order: iSCSI, multipath, FC, NVMe/TCP, kernel. */
public record DoctorReport(List<TransportReadiness> transports) {

    public DoctorReport {
        transports = List.copyOf(transports);
    }

    public Severity worst() {
        return transports.stream().map(TransportReadiness::worst).max(Enum::compareTo).orElse(Severity.OK);
    }
}
