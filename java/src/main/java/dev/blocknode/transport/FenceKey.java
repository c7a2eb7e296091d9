package dev.blocknode.transport;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;

/**
 * A node's SCSI-3 reservation key: 8 bytes, a 6-byte tag that names the node (the first bytes of SHA-256 of a
 * fixed prefix and the node id; never all zero, since a key of 0 means "none" to SPC-4) and a 2-byte generation
 * that each renewal advances. A key whose tag is ours is ours, whatever its generation: an old one left by a
 * crash, a lost reply or another of our paths.
 */
public record FenceKey(long tag, int generation) {

    /** Bumped only if the derivation changes: every node of a cluster must derive tags the same way. */
    static final String TAG_PREFIX = "blocknode fencing key v1\0";
    private static final long TAG_MASK = 0xffff_ffff_ffffL;

    public FenceKey {
        if ((tag & ~TAG_MASK) != 0 || tag == 0) {
            throw new IllegalArgumentException("a fence key's tag is 48 bits and not 0: " + Long.toHexString(tag));
        }
        if (generation < 0 || generation > 0xffff) {
            throw new IllegalArgumentException("a fence key's generation is 16 bits: " + generation);
        }
    }

    /** This node's tag, at generation 0. */
    public static FenceKey forNode(String nodeId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest((TAG_PREFIX + nodeId).getBytes(StandardCharsets.UTF_8));
            long tag = 0;
            for (int i = 0; i < 6; i++) {
                tag = (tag << 8) | (digest[i] & 0xff);
            }
            return new FenceKey(tag == 0 ? 1 : tag, 0); // a 2^-48 chance, but 0 must never be a tag
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /** The key as sent in a PERSISTENT RESERVE OUT parameter list. */
    public long value() {
        return (tag << 16) | generation;
    }

    public static FenceKey of(long value) {
        return new FenceKey(value >>> 16, (int) (value & 0xffff));
    }

    public static long tagOf(long value) {
        return value >>> 16;
    }

    /**
     * The keys a takeover from {@code holder} preempts, in order: the holder's node's other keys among
     * {@code seen} first (a renewal's lost reply can leave two), the holder's own last, so that the reservation moves
     * only once the node has nothing else left to write through.
     */
    public static List<Long> takeoverVictims(long holder, Collection<Long> seen) {
        List<Long> victims = new ArrayList<>(seen.stream()
                .filter(k -> tagOf(k) == tagOf(holder) && k != holder).distinct().toList());
        victims.add(holder);
        return victims;
    }

    /** Whether {@code value} (a key read from the target) carries this key's tag: this node's, any generation. */
    public boolean isOurs(long value) {
        return tagOf(value) == tag;
    }

    public FenceKey withGeneration(int next) {
        return new FenceKey(tag, next & 0xffff);
    }

    /** The key of the next renewal. */
    public FenceKey next() {
        return withGeneration(generation + 1);
    }

    /** The tag as 12 hex digits: what the log and the staging record show. */
    public String tagHex() {
        return HexFormat.of().toHexDigits(tag).substring(4);
    }

    public static String hex(long value) {
        return HexFormat.of().toHexDigits(value);
    }

    @Override
    public String toString() {
        return hex(value());
    }
}
