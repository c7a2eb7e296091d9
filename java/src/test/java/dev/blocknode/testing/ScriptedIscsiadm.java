package dev.blocknode.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The iscsiadm side of a fake SAN for one target: the argv the iSCSI transport runs, scripted on a
 * {@link ScriptedCommandRunner}, with the effects the real tool has (a record file in the node database,
 * a session in sysfs). Shared by every test that attaches an iSCSI LUN.
 */
public final class ScriptedIscsiadm {

    private final ScriptedCommandRunner commands;
    private final FakeSysfs sysfs;
    private final Path database;
    private final String iqn;

    public ScriptedIscsiadm(ScriptedCommandRunner commands, FakeSysfs sysfs, Path database, String iqn) {
        this.commands = commands;
        this.sysfs = sysfs;
        this.database = database;
        this.iqn = iqn;
    }

    /** iscsiadm -m node -T IQN -p PORTAL -I default OPERATION... */
    public String[] node(String portal, String... operation) {
        List<String> argv = new ArrayList<>(List.of("iscsiadm", "-m", "node", "-T", iqn, "-p", portal,
                "-I", "default"));
        argv.addAll(List.of(operation));
        return argv.toArray(String[]::new);
    }

    /** iscsiadm -o new writes the record file with iscsid.conf's defaults, as the real one does. */
    public void expectRecordCreated(String portal) {
        commands.expect(node(portal, "-o", "new")).andDo(c -> {
            Path record = record(portal);
            Files.createDirectories(record.getParent());
            Files.writeString(record, "node.name = " + iqn + "\nnode.session.auth.authmethod = None\n"
                    + "node.session.timeo.replacement_timeout = 120\n");
        });
    }

    /** The login makes session N on SCSI host H, as iscsid does. */
    public void expectLogin(String portal, int session, int host) {
        String address = portal.substring(0, portal.indexOf(':'));
        commands.expect(node(portal, "--login")).andDo(c -> sysfs.iscsiSession(session, host, iqn, address, 3260));
    }

    /** The logout ends session N on SCSI host H, as iscsid does; then the record is deleted. */
    public void expectLogout(String portal, int session, int host) {
        commands.expect(node(portal, "--logout")).andDo(c -> sysfs.removeIscsiSession(session, host));
        expectRecordDeleted(portal);
    }

    /** {@code -o delete} removes the portal's record file, as iscsiadm does. */
    public void expectRecordDeleted(String portal) {
        commands.expect(node(portal, "-o", "delete")).andDo(c -> deleteRecord(portal));
    }

    /** A record that exists before the test's calls: one a crashed stage wrote, say. */
    public void recordExists(String portal) throws IOException {
        Files.createDirectories(record(portal).getParent());
        Files.writeString(record(portal), "node.name = " + iqn + "\n");
    }

    private Path record(String portal) {
        return database.resolve("nodes/" + iqn + "/" + portal.replace(':', ','));
    }

    /**
     * For a runner in any order (a burst of unstages): the logout ends session N on SCSI host H, once; the record's
     * deletion is allowed any number of times (the transport skips it when the record is already gone, but the burst
     * does not fix which volume of a target is the last).
     */
    public void expectLogoutInAnyOrder(String portal, int session, int host) {
        commands.expect(node(portal, "--logout")).andDo(c -> sysfs.removeIscsiSession(session, host));
        commands.expect(node(portal, "-o", "delete")).anyTimes().andDo(c -> deleteRecord(portal));
    }

    /** The record file goes, and the target's directory with its last record, as iscsiadm does. */
    private void deleteRecord(String portal) throws IOException {
        Path record = record(portal);
        Files.deleteIfExists(record);
        if (Files.isDirectory(record.getParent())) {
            try (var left = Files.list(record.getParent())) {
                if (left.findAny().isEmpty()) {
                    Files.deleteIfExists(record.getParent());
                }
            }
        }
    }

    /** Each portal logged out in turn: session i+1 on SCSI host i+3, as the tests' logins numbered them. */
    public void expectLogoutOfBoth(String... portals) {
        for (int i = 0; i < portals.length; i++) {
            expectLogout(portals[i], i + 1, i + 3);
        }
    }
}
