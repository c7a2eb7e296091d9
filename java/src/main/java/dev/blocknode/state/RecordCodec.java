package dev.blocknode.state;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The bytes of one staging record file, apart from where the files live and when they are written
 * ({@link RecordStore}). A file is a 4-byte magic, the CRC32C of the rest, then the record as binary
 * protobuf: parsing it costs about a microsecond where text format cost twenty, and the checksum catches the
 * damage that a lenient binary parse would not (a truncated record can parse "successfully" with fields
 * missing). A record of a newer format version than {@link RecordStore#FORMAT_VERSION} is refused; unknown
 * fields of a record of a known version are not (see FORMAT_VERSION).
 */
final class RecordCodec {

    private static final byte[] MAGIC = {'b', 'n', 'r', '1'};
    private static final int HEADER = MAGIC.length + Integer.BYTES;

    private RecordCodec() {
    }

    static byte[] encode(StagingRecord record) {
        byte[] payload = record.toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(payload);
        return ByteBuffer.allocate(HEADER + payload.length).put(MAGIC).putInt((int) crc.getValue()).put(payload)
                .array();
    }

    static StagingRecord decode(Path file, byte[] bytes) throws IOException {
        StagingRecord record;
        try {
            record = StagingRecord.parseFrom(checkedPayload(file, bytes));
        } catch (InvalidProtocolBufferException e) {
            throw new IOException("staging record " + file + " is corrupt: " + e.getMessage(), e);
        }
        return requireKnownVersion(file, record.getFormatVersion(), record);
    }

    /** The payload after the magic and checksum, once both are right. */
    private static ByteBuffer checkedPayload(Path file, byte[] bytes) throws IOException {
        if (bytes.length < HEADER || !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new IOException("staging record " + file + " is corrupt: it does not start with the record"
                    + " header (" + bytes.length + " bytes)");
        }
        int expected = ByteBuffer.wrap(bytes, MAGIC.length, Integer.BYTES).getInt();
        CRC32C crc = new CRC32C();
        crc.update(bytes, HEADER, bytes.length - HEADER);
        if ((int) crc.getValue() != expected) {
            throw new IOException("staging record " + file + " is corrupt: checksum mismatch");
        }
        return ByteBuffer.wrap(bytes, HEADER, bytes.length - HEADER);
    }

    private static StagingRecord requireKnownVersion(Path file, int version, StagingRecord record)
            throws IOException {
        if (version > RecordStore.FORMAT_VERSION) {
            throw new IOException("staging record " + file + " has format version " + version
                    + ", newer than this plugin understands (" + RecordStore.FORMAT_VERSION + "): it was written by"
                    + " a newer blocknode, which this one would misread; upgrade the plugin again, or tear the"
                    + " volume down with the newer plugin before rolling back");
        }
        return record;
    }
}
