package dev.blocknode.transport.iscsi;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The InitiatorName= line of open-iscsi's file, whatever comments surround it. */
class InitiatorNameUnitTest {

    @Test
    void theNameIsTheValueOfItsLine() {
        assertEquals(Optional.of("iqn.1993-08.org.debian:01:abc"),
                InitiatorName.parse("## generated\n#InitiatorName=iqn.old\n  InitiatorName=iqn.1993-08.org.debian:01:abc \n"));
    }

    @Test
    void aFileWithoutANameNamesNone() {
        assertEquals(Optional.empty(), InitiatorName.parse("## comments only\n"));
        assertEquals(Optional.empty(), InitiatorName.parse("InitiatorName=\n"));
    }
}
