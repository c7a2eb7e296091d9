package dev.blocknode.scsi;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** Builds raw VPD page 0x83 bytes by hand, designator by designator, as a device returns them. */
final class Vpd {

    static final int BINARY = 1;
    static final int ASCII = 2;
    static final int UTF8 = 3;
    static final int LUN = 0;
    static final int TARGET_PORT = 1;
    static final int TARGET_DEVICE = 2;

    private Vpd() {
    }

    static byte[] page(byte[]... designators) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (byte[] d : designators) {
            body.writeBytes(d);
        }
        int length = body.size();
        ByteArrayOutputStream page = new ByteArrayOutputStream();
        page.write(0x00);            // peripheral qualifier / device type: direct access
        page.write(0x83);            // page code
        page.write(length >> 8);
        page.write(length & 0xff);
        page.writeBytes(body.toByteArray());
        return page.toByteArray();
    }

    static byte[] designator(int codeSet, int association, int type, byte[] value) {
        ByteArrayOutputStream d = new ByteArrayOutputStream();
        d.write(codeSet & 0x0f);                          // protocol identifier 0, code set
        d.write(((association & 0x3) << 4) | (type & 0x0f)); // PIV 0, association, designator type
        d.write(0);
        d.write(value.length);
        d.writeBytes(value);
        return d.toByteArray();
    }

    static byte[] naa(String hex) {
        return designator(BINARY, LUN, 3, HexFormat.of().parseHex(hex));
    }

    static byte[] eui64(String hex) {
        return designator(BINARY, LUN, 2, HexFormat.of().parseHex(hex));
    }

    static byte[] t10(String text) {
        return designator(ASCII, LUN, 1, text.getBytes(StandardCharsets.US_ASCII));
    }

    /** A SCSI name string: UTF-8, NUL-terminated and padded to a multiple of 4 bytes. */
    static byte[] scsiName(int association, String name) {
        byte[] text = name.getBytes(StandardCharsets.UTF_8);
        int padded = (text.length + 1 + 3) / 4 * 4;
        byte[] value = new byte[padded];
        System.arraycopy(text, 0, value, 0, text.length);
        return designator(UTF8, association, 8, value);
    }

    static byte[] targetPortNaa(String hex) {
        return designator(BINARY, TARGET_PORT, 3, HexFormat.of().parseHex(hex));
    }

    /** Relative target port designator (type 4): association target port. */
    static byte[] relativeTargetPort(int port) {
        return designator(BINARY, TARGET_PORT, 4, new byte[]{0, 0, 0, (byte) port});
    }
}
