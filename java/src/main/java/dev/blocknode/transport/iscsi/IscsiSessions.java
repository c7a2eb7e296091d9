package dev.blocknode.transport.iscsi;

import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.ScsiAddress;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Live iSCSI sessions as the kernel shows them in sysfs: which target and portal each serves, which SCSI
 * host it is, and which LUN devices it carries. Read from sysfs rather than iscsiadm's output, so it is
 * exact, cheap, and true after a restart of the plugin.
 */
public final class IscsiSessions {

    /**
     * One session: its number, the SCSI host it created, its target and portal, the SCSI target id the
     * kernel gave it, and its SCSI target dirs (none until a LUN is scanned: logins use manual scan).
     */
    public record Session(int number, int host, String iqn, Portal portal, String iface, int targetId,
                          List<String> scsiTargets) {

        /**
         * Channel and target id of the session's SCSI target: from its target dir once one exists, else
         * channel 0 and the session's target_id (iSCSI sessions have a single channel).
         */
        public int[] channelAndTarget() {
            for (String target : scsiTargets) {
                Matcher m = TARGET.matcher(target);
                if (m.matches()) {
                    return new int[]{Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3))};
                }
            }
            return new int[]{0, targetId};
        }

        /** Where LUN {@code lun} of the session's target is (or would be, once scanned in): H:C:T:L. */
        public ScsiAddress addressOf(long lun) {
            int[] channelAndTarget = channelAndTarget();
            return new ScsiAddress(host, channelAndTarget[0], channelAndTarget[1], lun);
        }

        /** Whether this session is the one of {@code path}: its target, portal and iface. */
        public boolean serves(IscsiPath path) {
            return iqn.equals(path.iqn()) && portal.equals(path.portal()) && iface.equals(path.iface());
        }

        /**
         * Whether the session still has a SCSI target id: the kernel sets target_id to -1 when it unbinds a session
         * on its way out (a logout under way), and such a session has no address a LUN could be scanned at.
         */
        public boolean bound() {
            return channelAndTarget()[1] >= 0;
        }
    }

    private static final Pattern HOST = Pattern.compile("host(\\d+)");
    private static final Pattern TARGET = Pattern.compile("target(\\d+):(\\d+):(\\d+)");
    private static final Pattern SESSION = Pattern.compile("session(\\d+)");

    private final HostPaths host;

    public IscsiSessions(HostPaths host) {
        this.host = host;
    }

    public List<Session> all() throws IOException {
        return sessionsWhere(entry -> true);
    }

    public Optional<Session> find(IscsiPath path) throws IOException {
        for (Session session : ofTarget(path.iqn())) {
            if (session.serves(path)) {
                return Optional.of(session);
            }
        }
        return Optional.empty();
    }

    /**
     * The sessions of target {@code iqn}, in the order {@link #all} lists them. A session of another target costs one
     * read (its targetname), not the seven of a whole session: with a target per volume, a look at one volume's
     * sessions would otherwise read every session of the node in full (measured in figure k of test-e2e/bench: 3 s of
     * CPU per repair pass over 100 volumes).
     */
    public List<Session> ofTarget(String iqn) throws IOException {
        return sessionsWhere(entry -> isOfTarget(entry, iqn));
    }

    /** A test of a session's class entry (/sys/class/iscsi_session/sessionN) that may read it. */
    private interface EntryTest {
        boolean test(Path classEntry) throws IOException;
    }

    private List<Session> sessionsWhere(EntryTest wanted) throws IOException {
        Path sessions = host.sys().resolve("class/iscsi_session");
        List<Session> found = new ArrayList<>();
        if (!Files.isDirectory(sessions)) {
            return found;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(sessions, "session*")) {
            for (Path entry : entries) {
                if (wanted.test(entry)) {
                    read(entry).ifPresent(found::add);
                }
            }
        }
        return found;
    }

    private static boolean isOfTarget(Path classEntry, String iqn) throws IOException {
        try {
            return attribute(classEntry.resolve("targetname")).equals(iqn);
        } catch (NoSuchFileException vanishedOrPartial) {
            return false; // read() would pass it over too
        }
    }

    /** open-iscsi's word for a session that carries I/O (iscsi_session's {@code state} attribute). */
    public static final String LOGGED_IN = "LOGGED_IN";

    /**
     * The session's state as the kernel has it: {@link #LOGGED_IN}, or FAILED / REOPEN / FREE while iscsid recovers
     * it (or gives up after replacement_timeout and its I/O fails upwards); "unknown" when sysfs does not say.
     */
    public String state(Session session) throws IOException {
        try {
            return attribute(host.sys().resolve("class/iscsi_session/session" + session.number() + "/state"));
        } catch (NoSuchFileException gone) {
            return "unknown";
        }
    }

    /**
     * SCSI devices the session still carries ("H:C:T:L" names), whoever staged them: the session may be
     * logged out only when this is empty.
     */
    public List<String> devices(Session session) throws IOException {
        List<String> devices = new ArrayList<>();
        Path sessionDir = sessionDevice(session.number());
        for (String target : session.scsiTargets()) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(sessionDir.resolve(target))) {
                for (Path entry : entries) {
                    String name = entry.getFileName().toString();
                    if (name.matches("\\d+:\\d+:\\d+:\\d+")) {
                        devices.add(name);
                    }
                }
            } catch (NoSuchFileException gone) {
                // the target went away with its last device
            }
        }
        return devices;
    }

    private Optional<Session> read(Path classEntry) throws IOException {
        Matcher number = SESSION.matcher(classEntry.getFileName().toString());
        if (!number.matches()) {
            return Optional.empty();
        }
        int n = Integer.parseInt(number.group(1));
        try {
            String iqn = attribute(classEntry.resolve("targetname"));
            String iface = attribute(classEntry.resolve("ifacename"));
            Path connection = host.sys().resolve("class/iscsi_connection/connection" + n + ":0");
            Portal portal = new Portal(attribute(connection.resolve("persistent_address")),
                    Integer.parseInt(attribute(connection.resolve("persistent_port"))));
            // /sys/class/iscsi_session/sessionN/device -> .../hostH/sessionN
            Path device = sessionDevice(n).toRealPath();
            Matcher hostName = HOST.matcher(device.getParent().getFileName().toString());
            if (!hostName.matches()) {
                return Optional.empty();
            }
            List<String> targets = new ArrayList<>();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(device, "target*")) {
                entries.forEach(t -> targets.add(t.getFileName().toString()));
            }
            int targetId = Files.exists(classEntry.resolve("target_id"))
                    ? Integer.parseInt(attribute(classEntry.resolve("target_id"))) : 0;
            return Optional.of(new Session(n, Integer.parseInt(hostName.group(1)), iqn, portal,
                    iface.isEmpty() ? IscsiPath.DEFAULT_IFACE : iface, targetId, targets));
        } catch (NoSuchFileException | IllegalArgumentException vanishedOrPartial) {
            return Optional.empty(); // a session being created or torn down right now
        }
    }

    private Path sessionDevice(int number) {
        return host.sys().resolve("class/iscsi_session/session" + number + "/device");
    }

    private static String attribute(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8).strip();
    }
}
