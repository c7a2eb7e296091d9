package dev.blocknode.doctor;

import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The node's own view of an initiator identity that is likely not its own alone: values that many machines carry
 * alike by construction. Two nodes with one identity cannot be seen from either node (the storage takes them for
 * one host); only the cluster-wide comparison of every node's identity series can (the BlocknodeDuplicate* alerts).
 * What a node can see alone is a name no machine generated for itself:
 * <ul>
 *   <li>an NVMe host NQN or host ID whose UUID is a placeholder: all zeros or all ones, the unset SMBIOS UUID
 *   many boards ship ({@code 03000200-0400-0500-0006-000700080009}), from which nvme-cli derives the host NQN,
 *   or RFC 4122's example UUID, copied from documentation;</li>
 *   <li>an iSCSI name in a domain RFC 2606 reserves for examples ({@code iqn.YYYY-MM.com.example...}): copied
 *   from documentation, since no one can own that naming authority.</li>
 * </ul>
 */
final class SharedIdentity {

    /** What a finding adds: the duplicate itself is only visible across the cluster. */
    static final String CLUSTER_WIDE = "; whether another node presents the same name is visible only across the"
            + " cluster: the BlocknodeDuplicate* alerts compare every node's identity series"
            + " (docs/operations.md#alerts)";

    private static final Set<String> PLACEHOLDER_UUIDS = Set.of(
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "03000200-0400-0500-0006-000700080009",
            "f81d4fae-7dec-11d0-a765-00a0c91e6bf6");
    private static final Pattern NQN_UUID = Pattern.compile("nqn\\.2014-08\\.org\\.nvmexpress:uuid:(\\S+)");
    private static final Pattern EXAMPLE_IQN =
            Pattern.compile("iqn\\.\\d{4}-\\d{2}\\.(com|org|net)\\.example([.:].*)?");

    private SharedIdentity() {
    }

    /** The placeholder UUID a host NQN of the UUID form carries, if it carries one. */
    static Optional<String> placeholderInHostNqn(String hostNqn) {
        Matcher m = NQN_UUID.matcher(hostNqn);
        return m.matches() && isPlaceholder(m.group(1)) ? Optional.of(m.group(1)) : Optional.empty();
    }

    /** True for a UUID many machines carry alike (in either case). */
    static boolean isPlaceholder(String uuid) {
        return PLACEHOLDER_UUIDS.contains(uuid.toLowerCase(Locale.ROOT));
    }

    /** True for an iSCSI name under example.com, example.org or example.net. */
    static boolean isExampleIqn(String name) {
        return EXAMPLE_IQN.matcher(name).matches();
    }
}
