package dev.blocknode.e2e.controller;

import dev.blocknode.transport.fc.Wwpn;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;

/**
 * Volumes as LUNs of LIO's Fibre Channel target, tcm_fc (the VM tier's array, on FCoE ports), configured
 * through configfs directly (no targetcli), handed to the node plugin's {@code fc} transport: volume_context
 * {@code transport=fc}, {@code targetWWNs} (every target port), {@code lun} and {@code wwids}.
 *
 * <p>At start the backend makes a TPG on each target port ({@code fc/<wwpn>/tpgt_1}) with an ACL for each
 * node port; they must exist before the ports log in: a node port that logged in before sees the array port
 * as an initiator only and keeps seeing it so (measured in the VM tier). Each volume is a fileio backstore over
 * its file ({@code core/fileio_21/vol<N>}), exported as the same LUN number on every TPG and mapped in every
 * ACL. {@link #close()} takes down what the backend made and nothing else.
 *
 * <p>Identity: LIO builds the LUN's NAA designator from its company id (default OUI 00:14:05) and the first 25
 * hex digits of its unit serial, so each volume gets a serial of 25 random hex digits and the WWID
 * {@code 36001405} + that serial. LUN numbers go round 0..{@link #MAX_LUN}, not handed out again at once; when
 * one is, the new LUN has a new WWID, and a node holding a stale disk of the deleted volume at that address
 * must not take it for either (the plugin asks the disk again: see the fc scenario's "reused" part).
 *
 * <p>Growing: the file grows, then the backstore is told its new size ({@code control fd_dev_size=}, which
 * LIO takes while the LUN is exported; READ CAPACITY answers it at once), so expansion is ONLINE.
 */
public final class LioFcBackend implements VolumeBackend {

    private static final Logger LOG = Logger.getLogger(LioFcBackend.class.getName());

    static final int MAX_LUN = 255;
    /** The fileio HBA of this backend's backstores: its own, so that close() removes nothing of anyone else's. */
    static final String HBA = "fileio_21";
    /** LIO's default company id, the NAA's OUI. */
    private static final String NAA_PREFIX = "6001405";
    private static final int SERIAL_DIGITS = 25;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Configfs.Rmdir rmdir;
    private final Path target;
    private final List<String> targetPorts;
    private final List<String> initiators;
    private final List<String> made = new ArrayList<>(); // the target ports whose TPG this backend made
    private final Map<Integer, String> backstores = new HashMap<>(); // LUN -> backstore name
    private int last = -1;
    private int volumes;

    private LioFcBackend(Configfs.Rmdir rmdir, Path target, List<String> targetPorts, List<String> initiators) {
        this.rmdir = rmdir;
        this.target = target;
        this.targetPorts = List.copyOf(targetPorts);
        this.initiators = List.copyOf(initiators);
    }

    /**
     * Makes the TPG of each target port under {@code target} (/sys/kernel/config/target), with an ACL for each
     * initiator, and the backstores' HBA.
     *
     * @param targetPorts the array's FC ports (WWPNs in any spelling), each with a tcm_fc port already
     * @param initiators  the node's FC ports (WWPNs) allowed to see the LUNs
     * @throws IOException when configfs refuses (a TPG of that port exists: not ours to use)
     */
    public static LioFcBackend start(Path target, List<String> targetPorts, List<String> initiators)
            throws IOException {
        return start(Configfs.Rmdir.KERNEL, target, targetPorts, initiators);
    }

    static LioFcBackend start(Configfs.Rmdir rmdir, Path target, List<String> targetPorts, List<String> initiators)
            throws IOException {
        if (targetPorts.isEmpty() || initiators.isEmpty()) {
            throw new IllegalArgumentException("at least one target port and one initiator are needed");
        }
        LioFcBackend backend = new LioFcBackend(rmdir, target, targetPorts.stream().map(LioFcBackend::lio).toList(),
                initiators.stream().map(LioFcBackend::lio).toList());
        try {
            Files.createDirectories(target.resolve("core"));
            Files.createDirectory(backend.hba());
            for (String port : backend.targetPorts) {
                // (configfs makes a TPG's lun/ and acls/ itself; a plain directory, as in the unit test, needs
                // them made: createDirectories does either.)
                Path tpg = Files.createDirectories(target.resolve("fc").resolve(port)).resolve("tpgt_1");
                Files.createDirectory(tpg);
                backend.made.add(port);
                for (String initiator : backend.initiators) {
                    Files.createDirectories(tpg.resolve("acls").resolve(initiator));
                }
            }
        } catch (IOException | RuntimeException e) {
            backend.close();
            throw e;
        }
        LOG.info(() -> "tcm_fc TPGs on " + backend.targetPorts + " for initiators " + backend.initiators);
        return backend;
    }

    @Override
    public String name() {
        return "fc";
    }

    @Override
    public synchronized Placement expose(String volumeId, Path file, long bytes) throws IOException {
        int lun = nextLun();
        byte[] random = new byte[(SERIAL_DIGITS + 1) / 2];
        RANDOM.nextBytes(random);
        String serial = HexFormat.of().formatHex(random).substring(0, SERIAL_DIGITS);
        String name = "vol" + ++volumes;
        backstores.put(lun, name);
        last = lun;
        try {
            Path store = Files.createDirectory(hba().resolve(name));
            write(store.resolve("control"), "fd_dev_name=" + file + ",fd_dev_size=" + bytes);
            write(Files.createDirectories(store.resolve("wwn")).resolve("vpd_unit_serial"), serial);
            write(store.resolve("enable"), "1");
            for (String port : targetPorts) {
                Path lunDir = Files.createDirectories(tpg(port).resolve("lun").resolve("lun_" + lun));
                Files.createSymbolicLink(lunDir.resolve("store"), store);
                for (String initiator : initiators) {
                    Path mapped = Files.createDirectory(acl(port, initiator).resolve("lun_" + lun));
                    Files.createSymbolicLink(mapped.resolve("map"), lunDir);
                }
            }
        } catch (IOException e) {
            withdraw(lun);
            throw e;
        }
        Map<String, String> context = new LinkedHashMap<>();
        context.put("transport", "fc");
        context.put("targetWWNs", String.join(",", targetPorts));
        context.put("lun", Integer.toString(lun));
        context.put("wwids", wwid(serial));
        return new Placement("LUN " + lun + " of tcm_fc ports " + targetPorts + " (" + name + ")", context);
    }

    @Override
    public synchronized Placement grow(Placement placement, Path file, long bytes) throws IOException {
        int lun = lunOf(placement);
        write(hba().resolve(backstores.get(lun)).resolve("control"), "fd_dev_size=" + bytes);
        LOG.info(() -> "LUN " + lun + " (" + backstores.get(lun) + ") is " + bytes + " bytes now");
        return placement;
    }

    @Override
    public synchronized void withdraw(Placement placement, Path file) throws IOException {
        withdraw(lunOf(placement));
    }

    /** Unmaps the LUN from every ACL, removes it from every TPG, then removes its backstore; gone is fine. */
    private void withdraw(int lun) throws IOException {
        for (String port : targetPorts) {
            for (String initiator : initiators) {
                Path mapped = acl(port, initiator).resolve("lun_" + lun);
                Files.deleteIfExists(mapped.resolve("map"));
                removeIfThere(mapped);
            }
            Path lunDir = tpg(port).resolve("lun").resolve("lun_" + lun);
            Files.deleteIfExists(lunDir.resolve("store"));
            removeIfThere(lunDir);
        }
        String name = backstores.remove(lun);
        if (name != null) {
            removeIfThere(hba().resolve(name));
        }
    }

    /** Removes the ACLs, TPGs and target ports it made, then the HBA (every volume is withdrawn by now). */
    @Override
    public synchronized void close() throws IOException {
        for (String port : made) {
            for (String initiator : initiators) {
                removeIfThere(acl(port, initiator));
            }
            removeIfThere(tpg(port));
            removeIfThere(target.resolve("fc").resolve(port));
        }
        made.clear();
        removeIfThere(hba());
        LOG.info(() -> "tcm_fc TPGs on " + targetPorts + " and their backstores' HBA removed");
    }

    /** The WWID the node sees for a LUN with this unit serial, in multipath's form. */
    static String wwid(String serial) {
        return "3" + NAA_PREFIX + serial;
    }

    /** A WWPN as LIO names its tcm_fc ports and ACLs: "20:00:02:fc:00:00:00:02". */
    static String lio(String wwpn) {
        return String.join(":", Wwpn.normalize(wwpn).split("(?<=\\G..)"));
    }

    private int nextLun() throws IOException {
        for (int i = 1; i <= MAX_LUN + 1; i++) {
            int lun = (last + i) % (MAX_LUN + 1);
            if (!backstores.containsKey(lun)) {
                return lun;
            }
        }
        throw new IOException("the tcm_fc TPGs have no free LUN number (all " + (MAX_LUN + 1) + " in use)");
    }

    private static int lunOf(Placement placement) {
        return Integer.parseInt(placement.volumeContext().get("lun"));
    }

    private Path hba() {
        return target.resolve("core").resolve(HBA);
    }

    private Path tpg(String port) {
        return target.resolve("fc").resolve(port).resolve("tpgt_1");
    }

    private Path acl(String port, String initiator) {
        return tpg(port).resolve("acls").resolve(initiator);
    }

    private void removeIfThere(Path dir) throws IOException {
        if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            rmdir.remove(dir);
        }
    }

    private static void write(Path attribute, String value) throws IOException {
        Configfs.write(attribute, value, "tcm_fc or target_core_file");
    }
}
