package dev.blocknode.volume.filesystem;

/** What a device holds, as far as its signatures and first bytes tell. Only {@link Blank} may be formatted. */
public sealed interface DeviceContent {

    /** No signature and the probed head is all zeros: a fresh LUN. */
    record Blank() implements DeviceContent {
    }

    record Filesystem(String type) implements DeviceContent {
    }

    record PartitionTable(String type) implements DeviceContent {
    }

    /** A known signature that is not a filesystem (LVM, LUKS, swap, RAID member...), or several at once. */
    record OtherSignature(String description) implements DeviceContent {
    }

    /** No signature blkid knows, but the head is not zeros: somebody's data. */
    record UnknownData() implements DeviceContent {
    }

    default String describe() {
        return switch (this) {
            case Blank b -> "nothing (blank)";
            case Filesystem f -> article(f.type()) + " filesystem";
            case PartitionTable p -> article(p.type()) + " partition table";
            case OtherSignature o -> article(o.description()) + " signature";
            case UnknownData u -> "data of an unknown kind (no signature, but the first bytes are not zero)";
        };
    }

    private static String article(String word) {
        return ("aeiouAEIOU".indexOf(word.isEmpty() ? 'x' : word.charAt(0)) >= 0 ? "an " : "a ") + word;
    }
}
