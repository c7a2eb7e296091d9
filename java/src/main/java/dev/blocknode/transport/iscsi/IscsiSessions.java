package dev.blocknode.transport.iscsi;

import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.ScsiAddress;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
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
    /**
     * The target of each session seen, by its entry's name (sessionN), so that a search reads a session's
     * {@code targetname} once. Safe because the kernel never gives a number to a second session while its iSCSI class
     * is loaded: scsi_transport_iscsi numbers sessions from one counter that only grows ({@code sid =
     * atomic_add_return(1, &iscsi_session_nr)} in iscsi_add_session), and a session keeps its target for life
     * (iscsid's re-logins in a recovery keep the session). The counter is the module's, so it starts again at 1 when
     * the module is unloaded (which needs every session gone) and loaded again: that makes another
     * /sys/class/iscsi_session directory, and an entry read under another one is not used ({@link Remembered#dir}). A
     * name iscsid has not set yet (empty, or "(null)" while the login is under way) is never kept. An entry goes once
     * its session is no longer listed, so the map is no larger than the node's sessions.
     */
    private final ConcurrentHashMap<String, Remembered> targets = new ConcurrentHashMap<>();

    /** A session's target, and the identity of the class directory (its file key) it was listed in. */
    private record Remembered(String target, Object dir) {
    }

    public IscsiSessions(HostPaths host) {
        this.host = host;
    }

    public List<Session> all() throws IOException {
        List<Session> found = new ArrayList<>();
        for (String name : sessionNames()) {
            read(sessionsDir().resolve(name)).ifPresent(found::add);
        }
        return found;
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
     * The sessions of target {@code iqn}, in the order {@link #all} lists them. A session of another target is not read
     * in full (figure k of test-e2e/bench: 3 s of CPU per repair pass over 100 volumes when it was), and once its
     * target is known ({@link #targets}) not read at all: with a target per volume, each search would otherwise read
     * the {@code targetname} of every session of the node, and a burst of N stages O(N^2) of them (figure l: the CPU
     * per volume grew 3.1x from N = 25 to 200).
     */
    public List<Session> ofTarget(String iqn) throws IOException {
        List<Session> found = new ArrayList<>();
        Object dir = classDirectory();
        String[] names = sessionNames();
        int remembered = 0;
        for (String name : names) {
            Remembered known = targets.get(name);
            String target;
            if (known != null && known.dir().equals(dir)) {
                target = known.target();
                remembered++;
            } else {
                target = readTarget(name, dir);
            }
            if (iqn.equals(target)) {
                read(sessionsDir().resolve(name)).ifPresent(found::add);
            }
        }
        if (targets.size() > remembered) { // some session remembered is no longer listed, or was under another module
            targets.keySet().retainAll(new HashSet<>(Arrays.asList(names)));
            targets.values().removeIf(known -> !known.dir().equals(dir));
        }
        return found;
    }

    /** The identity of /sys/class/iscsi_session now (a new one each time the module is loaded); a marker if none. */
    private Object classDirectory() throws IOException {
        try {
            Object key = Files.readAttributes(sessionsDir(), BasicFileAttributes.class).fileKey();
            return key == null ? NO_DIRECTORY : key;
        } catch (NoSuchFileException noModule) {
            return NO_DIRECTORY;
        }
    }

    private static final Object NO_DIRECTORY = new Object();

    /**
     * The entries of /sys/class/iscsi_session listed now ("sessionN"); none without the iscsi module. Names, not the
     * Paths of a DirectoryStream: a search lists every session of the node, and with a target per volume a Path and a
     * glob match per entry were half of what a search still cost at N = 200 (figure l).
     */
    private String[] sessionNames() throws IOException {
        Path sessions = sessionsDir();
        String[] names = sessions.toFile().list((dir, name) -> name.startsWith("session"));
        if (names != null) {
            return names;
        }
        // File.list does not say why: no directory (no iscsi module; it comes with the first login, maybe this very
        // moment, as figure l's first logins showed), or one that cannot be read, which a stream says.
        List<String> listed = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(sessions, "session*")) {
            entries.forEach(entry -> listed.add(entry.getFileName().toString()));
        } catch (NoSuchFileException | NotDirectoryException noModule) {
            return new String[0];
        }
        return listed.toArray(String[]::new);
    }

    /**
     * Whether session {@code number} has ended: its class entry is gone. Exact because its number is not given to
     * another session while the module stays loaded ({@link #targets}), which it does while it has a session; and what
     * iscsiadm checks before it deletes a node record.
     */
    public boolean ended(int number) {
        return !Files.exists(sessionsDir().resolve("session" + number));
    }

    /**
     * The target of session entry {@code name}, remembered once set, with the class directory {@code dir} it was
     * listed in; null when it is gone or not named yet.
     */
    private String readTarget(String name, Object dir) throws IOException {
        String target;
        try {
            target = attribute(sessionsDir().resolve(name).resolve("targetname"));
        } catch (NoSuchFileException vanishedOrPartial) {
            return null; // read() would pass it over too
        }
        if (target.isEmpty() || target.equals("(null)")) {
            return null; // iscsid sets it during the login: the next search reads it again
        }
        targets.put(name, new Remembered(target, dir));
        return target;
    }

    /** The targets remembered now, by session number (for tests). */
    Map<Integer, String> rememberedTargets() {
        Map<Integer, String> byNumber = new HashMap<>();
        targets.forEach((name, known) -> byNumber.put(Integer.parseInt(name.substring("session".length())),
                known.target()));
        return byNumber;
    }

    private Path sessionsDir() {
        return host.sys().resolve("class/iscsi_session");
    }

    /** open-iscsi's word for a session that carries I/O (iscsi_session's {@code state} attribute). */
    public static final String LOGGED_IN = "LOGGED_IN";

    /**
     * The session's state as the kernel has it: {@link #LOGGED_IN}, or FAILED / REOPEN / FREE while iscsid recovers
     * it (or gives up after replacement_timeout and its I/O fails upwards); "unknown" when sysfs does not say.
     */
    public String state(Session session) throws IOException {
        try {
            return attribute(sessionsDir().resolve("session" + session.number() + "/state"));
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
        return sessionsDir().resolve("session" + number + "/device");
    }

    private static String attribute(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8).strip();
    }
}
