package dev.blocknode.volume.read;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The reasons NodeGetStorageHealth gives; the problems themselves are in VolumeHealthUnitTest, end to end. */
class StorageHealthReaderUnitTest {

    @Test
    void reasonsAreCamelCaseNamesOfTheTransport() {
        assertEquals("Iscsi", StorageHealthReader.camelCase("iscsi"));
        assertEquals("NvmeTcp", StorageHealthReader.camelCase("nvme-tcp"));
        assertEquals("Fc", StorageHealthReader.camelCase("fc"));
    }
}
