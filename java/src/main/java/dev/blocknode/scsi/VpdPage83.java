package dev.blocknode.scsi;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The Device Identification VPD page (0x83) as the kernel exposes it raw in sysfs {@code device/vpd_pg83}:
 * a 4-byte header (peripheral byte, page code 0x83, 16-bit page length) followed by designators, each with
 * a 4-byte header (protocol identifier / code set; PIV / association / designator type; reserved; length).
 * Only designators associated with the logical unit (association 0) identify the LUN; the others name the
 * target port or target device, which are shared by every LUN behind them.
 */
public final class VpdPage83 {

    public static final int PAGE_CODE = 0x83;

    /** One designator of the page. */
    public record Designator(int codeSet, int association, int type, byte[] value) {

        public static final int ASSOCIATION_LUN = 0;
        public static final int TYPE_T10_VENDOR_ID = 0x1;
        public static final int TYPE_EUI64 = 0x2;
        public static final int TYPE_NAA = 0x3;
        public static final int TYPE_SCSI_NAME = 0x8;

        public Designator {
            value = value.clone();
        }

        @Override
        public byte[] value() {
            return value.clone();
        }

        public boolean identifiesLun() {
            return association == ASSOCIATION_LUN;
        }

        /** This designator as a WWID, for the types that are one. */
        public Optional<Wwid> toWwid() {
            if (value.length == 0) {
                return Optional.empty();
            }
            return switch (type) {
                case TYPE_NAA -> Optional.of(Wwid.ofBytes(Wwid.Type.NAA, value));
                case TYPE_EUI64 -> Optional.of(Wwid.ofBytes(Wwid.Type.EUI64, value));
                case TYPE_T10_VENDOR_ID -> text().map(Wwid::t10);
                case TYPE_SCSI_NAME -> text().map(Wwid::name);
                default -> Optional.empty();
            };
        }

        /**
         * multipath-tools' preference when it reads the page itself (which follows the order of udev's
         * 55-scsi-sg3_id.rules): NAA IEEE Registered Extended, Registered, Extended; then EUI-64; then a SCSI
         * name string starting eui./naa./iqn.; then T10 vendor id; NAA locally assigned last. 0 = never.
         */
        int multipathPriority() {
            if (!identifiesLun() || value.length == 0) {
                return 0;
            }
            return switch (type) {
                case TYPE_NAA -> switch ((value[0] & 0xff) >> 4) {
                    case 6 -> 8;
                    case 5 -> 7;
                    case 2 -> 6;
                    case 3 -> 1;
                    default -> 0;
                };
                case TYPE_EUI64 -> 4;
                case TYPE_SCSI_NAME -> text().filter(VpdPage83::isPrefixedName).isPresent() ? 3 : 0;
                case TYPE_T10_VENDOR_ID -> 2;
                default -> 0;
            };
        }

        /** ASCII/UTF-8 designators are NUL-padded to a multiple of four bytes: drop the padding. */
        private Optional<String> text() {
            int end = value.length;
            while (end > 0 && value[end - 1] == 0) {
                end--;
            }
            String text = new String(value, 0, end, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? Optional.empty() : Optional.of(text);
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Designator d && d.codeSet == codeSet && d.association == association
                    && d.type == type && Arrays.equals(d.value, value);
        }

        @Override
        public int hashCode() {
            return ((codeSet * 31 + association) * 31 + type) * 31 + Arrays.hashCode(value);
        }
    }

    private final List<Designator> designators;

    private VpdPage83(List<Designator> designators) {
        this.designators = List.copyOf(designators);
    }

    /**
     * Parses a raw page. A designator that runs past the end of the page (a truncated read) ends the list.
     *
     * @throws IllegalArgumentException when the bytes are not a page 0x83
     */
    public static VpdPage83 parse(byte[] page) {
        if (page.length < 4 || (page[1] & 0xff) != PAGE_CODE) {
            throw new IllegalArgumentException("not a VPD page 0x83 (" + page.length + " bytes"
                    + (page.length > 1 ? ", page code 0x" + Integer.toHexString(page[1] & 0xff) : "") + ")");
        }
        int end = Math.min(page.length, 4 + (((page[2] & 0xff) << 8) | (page[3] & 0xff)));
        List<Designator> found = new ArrayList<>();
        int offset = 4;
        while (offset + 4 <= end) {
            int length = page[offset + 3] & 0xff;
            if (offset + 4 + length > end) {
                break;
            }
            found.add(new Designator(page[offset] & 0x0f, (page[offset + 1] >> 4) & 0x03, page[offset + 1] & 0x0f,
                    Arrays.copyOfRange(page, offset + 4, offset + 4 + length)));
            offset += 4 + length;
        }
        return new VpdPage83(found);
    }

    public List<Designator> designators() {
        return designators;
    }

    /** Every designator of the logical unit that is a WWID, in page order. */
    public List<Wwid> lunWwids() {
        List<Wwid> wwids = new ArrayList<>();
        for (Designator designator : designators) {
            if (designator.identifiesLun()) {
                designator.toWwid().filter(w -> !wwids.contains(w)).ifPresent(wwids::add);
            }
        }
        return wwids;
    }

    /** The WWID multipath-tools derives from this page: the highest-priority LUN designator, first wins ties. */
    public Optional<Wwid> preferredWwid() {
        Designator best = null;
        int bestPriority = 0;
        for (Designator designator : designators) {
            int priority = designator.multipathPriority();
            if (priority > bestPriority) {
                best = designator;
                bestPriority = priority;
            }
        }
        return best == null ? Optional.empty() : best.toWwid();
    }

    private static boolean isPrefixedName(String name) {
        String lower = name.toLowerCase(java.util.Locale.ROOT);
        return lower.startsWith("eui.") || lower.startsWith("naa.") || lower.startsWith("iqn.");
    }
}
