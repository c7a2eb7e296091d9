package dev.blocknode.os;

import org.junit.jupiter.api.Test;

import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** VmRSS from a status file's text, and this very process's, read through the real /proc. */
class ProcessStatusUnitTest {

    @Test
    void theResidentSizeIsVmRssInBytes() {
        assertEquals(OptionalLong.of(51_200L * 1024), ProcessStatus.residentBytes(
                "Name:\tjava\nVmPeak:\t 4000000 kB\nVmRSS:\t   51200 kB\nRssAnon:\t  40000 kB\n"));
        assertEquals(OptionalLong.empty(), ProcessStatus.residentBytes("Name:\tkthreadd\n"), "a kernel thread");
    }

    @Test
    void thisProcessHasAResidentSize() {
        long bytes = ProcessStatus.residentBytes(HostPaths.real()).orElseThrow();
        assertTrue(bytes > 1 << 20, bytes + " bytes");
    }
}
