package dev.blocknode.os;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * The abstract Unix socket names bound in this network namespace, from /proc/net/unix ("@name" in its last
 * column). iscsid and multipathd listen on abstract sockets, which belong to a network namespace, not to a
 * filesystem: with hostNetwork the plugin's container sees the host's, and so does this. A name is listed for as
 * long as a socket bound to it is open (the listening one and those it accepted), so a daemon that died is gone
 * from the list at once.
 */
public final class AbstractSockets {

    public static final String ISCSID = "@ISCSIADM_ABSTRACT_NAMESPACE";
    public static final String MULTIPATHD = "@/org/kernel/linux/storage/multipathd";

    private final Set<String> names;

    private AbstractSockets(Set<String> names) {
        this.names = names;
    }

    /** The names in {@code procNetUnix} (the HostPaths' unixSockets); none when there is no such file. */
    public static AbstractSockets read(Path procNetUnix) throws IOException {
        String text;
        try {
            text = Files.readString(procNetUnix, StandardCharsets.UTF_8);
        } catch (NoSuchFileException absent) {
            text = "";
        }
        Set<String> names = new HashSet<>();
        for (String line : text.lines().skip(1).toList()) {
            String[] fields = line.strip().split("\\s+");
            // Num RefCount Protocol Flags Type St Inode Path: an unnamed socket has no Path column.
            if (fields.length >= 8 && fields[7].startsWith("@")) {
                names.add(fields[7]);
            }
        }
        return new AbstractSockets(names);
    }

    public boolean has(String name) {
        return names.contains(name);
    }
}
