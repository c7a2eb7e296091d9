package dev.blocknode.nvme.reservation;

/**
 * An NVMe completion's status field as the kernel returns it from passthrough: bits 7:0 the Status Code, 10:8
 * the Status Code Type, 14 Do Not Retry. Only the generic command statuses (type 0) fencing acts on are named.
 */
record CompletionStatus(int raw) {

    static final int SUCCESS = 0x00;
    static final int INVALID_OPCODE = 0x01;
    static final int INVALID_FIELD = 0x02;
    static final int HOST_IDENTIFIER_INCONSISTENT_FORMAT = 0x18;
    static final int RESERVATION_CONFLICT = 0x83;

    int code() {
        return raw & 0xff;
    }

    int codeType() {
        return (raw >> 8) & 0x7;
    }

    boolean succeeded() {
        return raw == 0;
    }

    boolean is(int genericCode) {
        return codeType() == 0 && code() == genericCode;
    }

    /** Invalid Command Opcode or Invalid Field: the namespace does not do reservations, or not this one. */
    boolean notSupported() {
        return is(INVALID_OPCODE) || is(INVALID_FIELD);
    }

    String describe() {
        return String.format("status type %d code 0x%02x%s", codeType(), code(), (raw & 0x4000) != 0 ? " (DNR)" : "");
    }
}
