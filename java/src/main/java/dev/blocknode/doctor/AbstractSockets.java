package dev.blocknode.doctor;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * The abstract Unix socket names bound in this network namespace, from /proc/net/unix ("@name" in its last
 * column). iscsid and multipathd listen on abstract sockets, which belong to a network namespace, not to a
 * filesystem: with hostNetwork the plugin's container sees the host's, and so does this.
 */
final class AbstractSockets {

    static final String ISCSID = "@ISCSIADM_ABSTRACT_NAMESPACE";
    static final String MULTIPATHD = "@/org/kernel/linux/storage/multipathd";

    private final Set<String> names;

    private AbstractSockets(Set<String> names) {
        this.names = names;
    }

    static AbstractSockets read(Path procNetUnix) throws IOException {
        Set<String> names = new HashSet<>();
        for (String line : HostFiles.read(procNetUnix).orElse("").lines().skip(1).toList()) {
            String[] fields = line.strip().split("\\s+");
            // Num RefCount Protocol Flags Type St Inode Path: an unnamed socket has no Path column.
            if (fields.length >= 8 && fields[7].startsWith("@")) {
                names.add(fields[7]);
            }
        }
        return new AbstractSockets(names);
    }

    boolean has(String name) {
        return names.contains(name);
    }
}
