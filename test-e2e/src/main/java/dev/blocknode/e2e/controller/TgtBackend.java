package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.transport.iscsi.IscsiVolumeSpec;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Volumes as LUNs of one iSCSI target served by a local tgtd (the VM tier's array), handed to the node
 * plugin's {@code iscsi} transport: volume_context {@code targetPortal}, {@code portals}, {@code iqn},
 * {@code lun} and {@code wwid}. The backend creates its target when it starts (open to every initiator),
 * adds a LUN per volume and deletes the target when it closes; it never touches another target.
 *
 * <p>LUN numbers: the next free one after the last used, from 1 to {@link #MAX_LUN} and around again,
 * so a deleted volume's number is not handed out again at once (a node that still held a stale disk of
 * it would otherwise see another volume behind the same address; the plugin's WWID check is the second
 * guard). {@link #MAX_LUN} stays inside single-level LUN addressing and iscsi_tcp's default max_lun.
 *
 * <p>WWID: tgtd gives a LUN the NAA identifier {@code 60000000000000000e000000TTTTLLLL} (target id and LUN
 * number in hex; measured in the VM tier, see test-e2e/vm/README.md), which Linux and multipath name
 * {@code 3} + that. The volume context carries it, so the plugin verifies every path against it.
 *
 * <p>Growing: tgtd reads a LUN's size when the LUN is added and has no operation to re-read it, so a LUN
 * grows by being deleted and added again over the same (grown) file, with the same number and so the
 * same WWID. tgtd refuses to delete a LUN with commands in flight ({@link InUseException}); an idle LUN
 * on a logged-in node comes back at its new size, for the node to rescan.
 */
public final class TgtBackend implements VolumeBackend {

    private static final Logger LOG = Logger.getLogger(TgtBackend.class.getName());

    static final int MAX_LUN = 255;
    private static final Duration TGTADM_TIMEOUT = Duration.ofSeconds(15);

    private final CommandRunner commands;
    private final int tid;
    private final String iqn;
    private final List<String> portals;
    private final Set<Integer> used = new HashSet<>();
    private int last;

    private TgtBackend(CommandRunner commands, int tid, String iqn, List<String> portals) {
        this.commands = commands;
        this.tid = tid;
        this.iqn = iqn;
        this.portals = List.copyOf(portals);
    }

    /**
     * Creates target {@code tid} named {@code iqn} on the local tgtd, open to every initiator.
     *
     * @param portals where nodes reach tgtd (address:port), the first one becoming {@code targetPortal}
     * @throws IOException when tgtd refuses (a target with that id exists already: it is not ours to use)
     */
    public static TgtBackend start(CommandRunner commands, int tid, String iqn, List<String> portals)
            throws IOException {
        if (portals.isEmpty()) {
            throw new IllegalArgumentException("at least one portal is needed");
        }
        TgtBackend backend = new TgtBackend(commands, tid, iqn, portals);
        backend.tgtadm("target", "new", "--tid", Integer.toString(tid), "--targetname", iqn);
        try {
            backend.tgtadm("target", "bind", "--tid", Integer.toString(tid), "--initiator-address", "ALL");
        } catch (IOException e) {
            backend.close();
            throw e;
        }
        LOG.info(() -> "tgt target " + tid + " (" + iqn + ") created; portals " + portals);
        return backend;
    }

    @Override
    public String name() {
        return "tgt";
    }

    @Override
    public synchronized Placement expose(String volumeId, Path file, long bytes) throws IOException {
        int lun = nextLun();
        addLun(lun, file);
        used.add(lun);
        last = lun;
        return placement(lun);
    }

    @Override
    public synchronized Placement grow(Placement placement, Path file, long bytes) throws IOException {
        int lun = lunOf(placement);
        deleteLun(lun);
        addLun(lun, file);
        LOG.info(() -> "LUN " + lun + " of target " + tid + " added again at " + bytes + " bytes");
        return placement;
    }

    @Override
    public synchronized void withdraw(Placement placement, Path file) throws IOException {
        int lun = lunOf(placement);
        deleteLun(lun);
        used.remove(lun);
    }

    /** Deletes the target; tgtd refuses while a node is still logged in to it, and this says so. */
    @Override
    public synchronized void close() throws IOException {
        tgtadm("target", "delete", "--tid", Integer.toString(tid));
        LOG.info(() -> "tgt target " + tid + " (" + iqn + ") deleted");
    }

    /** The WWID of LUN {@code lun} of target {@code tid}, in multipath's form. */
    static String wwid(int tid, int lun) {
        return String.format("360000000000000000e000000%04x%04x", tid, lun);
    }

    Placement placement(int lun) {
        Map<String, String> context = new LinkedHashMap<>();
        context.put(IscsiVolumeSpec.TARGET_PORTAL, portals.getFirst());
        if (portals.size() > 1) {
            context.put(IscsiVolumeSpec.PORTALS, String.join(",", portals.subList(1, portals.size())));
        }
        context.put(IscsiVolumeSpec.IQN, iqn);
        context.put(IscsiVolumeSpec.LUN, Integer.toString(lun));
        context.put(IscsiVolumeSpec.WWID, wwid(tid, lun));
        return new Placement("LUN " + lun + " of " + iqn, context);
    }

    private int nextLun() throws IOException {
        for (int i = 1; i <= MAX_LUN; i++) {
            int lun = (last + i - 1) % MAX_LUN + 1;
            if (!used.contains(lun)) {
                return lun;
            }
        }
        throw new IOException("target " + iqn + " has no free LUN number (all " + MAX_LUN + " in use)");
    }

    private static int lunOf(Placement placement) {
        return Integer.parseInt(placement.volumeContext().get(IscsiVolumeSpec.LUN));
    }

    private void addLun(int lun, Path file) throws IOException {
        tgtadm("logicalunit", "new", "--tid", Integer.toString(tid), "--lun", Integer.toString(lun),
                "--backing-store", file.toString());
    }

    /** Deletes the LUN; one that is already gone is fine, one with commands in flight is in use. */
    private void deleteLun(int lun) throws IOException {
        Command delete = command("logicalunit", "delete", "--tid", Integer.toString(tid), "--lun",
                Integer.toString(lun));
        CommandResult result = commands.run(delete);
        if (result.succeeded()) {
            return;
        }
        String said = result.stderr() + result.stdout();
        if (said.contains("can't find the logical unit")) {
            LOG.info(() -> "LUN " + lun + " of target " + tid + " was already gone");
            return;
        }
        if (said.contains("still active")) {
            throw new InUseException("tgtd refuses to delete LUN " + lun + " of " + iqn + ": it has commands in"
                    + " flight (" + said.strip() + ")");
        }
        throw CommandException.failed(delete, result);
    }

    private void tgtadm(String mode, String op, String... args) throws IOException {
        commands.runChecked(command(mode, op, args));
    }

    private static Command command(String mode, String op, String... args) {
        List<String> argv = new ArrayList<>(List.of("tgtadm", "--lld", "iscsi", "--mode", mode, "--op", op));
        argv.addAll(List.of(args));
        return new Command(argv, TGTADM_TIMEOUT, null);
    }
}
