package dev.blocknode.testing;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.SysfsWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A fabricated /sys (with /dev, /proc and /etc beside it) laid out like the kernel's, symlinks included, for the
 * SCSI / FC / device-mapper hardware this machine does not have:
 * <pre>
 * devices/pci0000:00/0000:00:0H.0/hostH/scsi_host/hostH/scan
 *                                      /fc_host/hostH/{port_name,port_state,node_name,fabric_name}
 *                                      /rport-H:C-N/fc_remote_ports/rport-H:C-N/{port_name,port_state,scsi_target_id,roles}
 *                                      /rport-H:C-N/targetH:C:T/fc_transport/targetH:C:T/{port_name,node_name}
 *                                      /rport-H:C-N/targetH:C:T/H:C:T:L/{state,wwid,vpd_pg83,rescan,delete}
 *                                      /rport-H:C-N/targetH:C:T/H:C:T:L/scsi_device/H:C:T:L/device -> ../../../H:C:T:L
 *                                      /rport-H:C-N/targetH:C:T/H:C:T:L/block/sdX/{dev,size,uevent,holders/,slaves/}
 *                                      /rport-H:C-N/targetH:C:T/H:C:T:L/block/sdX/device -> ../../../H:C:T:L
 * devices/virtual/block/dm-N/{dev,uevent,dm/name,dm/uuid,slaves/sdX -> ..., holders/}
 * class/{scsi_host,fc_host,fc_remote_ports,fc_transport,scsi_device,block}/* -> ../../devices/...
 * block/sdX -> ../devices/...   dev/block/M:m -> ../../devices/...
 * </pre>
 * It is also the {@link SysfsWriter}: each write really writes the file (a test reads a scan file back),
 * is logged, and gets the kernel's reaction: a scan "C T L" of a LUN presented with {@link #presentLun}
 * creates its disk; "1" to a device's delete removes the disk; "1" to its rescan re-reads its identity from
 * the LUN presented at its address now. The wildcard scan "- - -" fails the test.
 *
 * <p>What the kernel's FC stack showed in the VM tier (FCoE VN2VN with LIO as the array, scsi_mod.scan=manual)
 * and this mirrors: a remote port has no targetH:C:T directory and no fc_transport entry until a LUN behind
 * it is scanned; the target appears with its first disk and goes with its last (a scan of an unmapped LUN
 * leaves nothing); a scan of an address that has a disk changes nothing, and the disk keeps the identity it
 * was probed with until it is rescanned, even when the array has put another LUN at that number; a port
 * whose dev_loss_tmo ran out is "Not Present" with roles "unknown" and keeps its target id, its disks gone.
 *
 * <p>Each change to the tree (and each write with its reaction) is made under this object's lock, so that threads
 * staging volumes at once (a burst) see the kernel's changes one at a time, as a reader of sysfs sees them.
 */
public final class FakeSysfs implements SysfsWriter {

    /** One write to an attribute, with the path as written (through /sys/class/... links). */
    public record Write(Path attribute, String value) {
    }

    /** A disk's places in the tree. */
    public record Disk(ScsiAddress address, String name, DeviceNumber number, Path deviceDir, Path blockDir) {
    }

    /** What a scan of an address makes appear. */
    private record Presented(String name, DeviceNumber number, String wwid, byte[] vpd83, String state) {
    }

    private final Path sys;
    private final Path dev;
    private final Path etc;
    private final HostPaths paths;
    private final Map<Integer, Path> hostDirs = new LinkedHashMap<>();
    private final Map<String, Path> targetParents = new LinkedHashMap<>(); // "H:C:T" -> rport or session dir
    private final Map<String, String> fcTargets = new LinkedHashMap<>(); // "H:C:T" -> the remote port's WWPN
    private final Map<String, Disk> disks = new LinkedHashMap<>();
    private final Map<String, Path> maps = new LinkedHashMap<>();
    private final Map<ScsiAddress, Presented> presented = new LinkedHashMap<>();
    private final List<Write> writes = new ArrayList<>();
    private final Map<Path, Integer> failingWrites = new HashMap<>();
    private final Set<Integer> sessionNumbers = new HashSet<>();
    private final List<Write> failedWrites = new ArrayList<>();

    public FakeSysfs(Path tempDir) throws IOException {
        Path root = tempDir.toRealPath();
        this.sys = Files.createDirectories(root.resolve("sys"));
        this.dev = Files.createDirectories(root.resolve("dev"));
        Path proc = Files.createDirectories(root.resolve("proc"));
        this.etc = Files.createDirectories(root.resolve("etc"));
        this.paths = new HostPaths(sys, dev, proc, etc);
        for (String dir : List.of("class/scsi_host", "class/fc_host", "class/fc_remote_ports", "class/fc_transport",
                "class/scsi_device", "class/block", "block", "dev/block", "devices/virtual/block")) {
            Files.createDirectories(sys.resolve(dir));
        }
    }

    public HostPaths paths() {
        return paths;
    }

    public Path sys() {
        return sys;
    }

    /** A file of the node's configuration under the fabricated /etc, e.g. "iscsi/initiatorname.iscsi". */
    public Path etcFile(String relative, String content) throws IOException {
        Path file = etc.resolve(relative);
        Files.createDirectories(file.getParent());
        return Files.writeString(file, content);
    }

    // ---- hosts and ports -----------------------------------------------------------------------

    /**
     * An FC HBA port: SCSI host H with fc_host attributes. Its fabric_name is 0x0, as with the VM tier's FCoE
     * VN2VN ports (point-to-point, no switch); a port on a switched fabric shows the switch's WWN there.
     */
    public synchronized FakeSysfs fcHost(int host, String wwpn, String state) throws IOException {
        Path hostDir = scsiHost(host);
        Path fcHost = hostDir.resolve("fc_host/host" + host);
        attribute(fcHost.resolve("port_name"), wwpn);
        attribute(fcHost.resolve("node_name"), "0x20000000c9" + String.format("%06x", host));
        attribute(fcHost.resolve("port_state"), state);
        attribute(fcHost.resolve("fabric_name"), "0x0");
        link(sys.resolve("class/fc_host/host" + host), fcHost);
        return this;
    }

    /** A SCSI host with no FC attributes (an iSCSI session's host, say). */
    public synchronized Path scsiHost(int host) throws IOException {
        Path existing = hostDirs.get(host);
        if (existing != null) {
            return existing;
        }
        Path hostDir = sys.resolve(String.format("devices/pci0000:00/0000:00:%02x.0/host%d", 16 + host, host));
        Path scsiHost = hostDir.resolve("scsi_host/host" + host);
        attribute(scsiHost.resolve("scan"), "");
        attribute(scsiHost.resolve("proc_name"), "lpfc");
        link(sys.resolve("class/scsi_host/host" + host), scsiHost);
        hostDirs.put(host, hostDir);
        return hostDir;
    }

    /**
     * A remote port seen by host H on channel C; with a target id >= 0 it is a SCSI target. Its roles are the
     * kernel's for such a port: "FCP Target" for a target, "FCP Initiator" for another initiator, "unknown"
     * once it is "Not Present".
     */
    public synchronized FakeSysfs remotePort(int host, int channel, int number, String wwpn, String state,
                                             int scsiTargetId)
            throws IOException {
        String roles = state.equals("Not Present") ? "unknown" : scsiTargetId >= 0 ? "FCP Target" : "FCP Initiator";
        return remotePort(host, channel, number, wwpn, state, scsiTargetId, roles);
    }

    /**
     * A remote port with the roles given as sysfs lists them: "FCP Target, FCP Initiator" is an LIO or FCoE
     * array port (the VM tier's), which logs in as an initiator too.
     */
    public synchronized FakeSysfs remotePort(int host, int channel, int number, String wwpn, String state,
                                             int scsiTargetId,
                                String roles) throws IOException {
        Path hostDir = scsiHost(host);
        String name = "rport-" + host + ":" + channel + "-" + number;
        Path rportDir = hostDir.resolve(name);
        Path classDir = rportDir.resolve("fc_remote_ports/" + name);
        attribute(classDir.resolve("port_name"), wwpn);
        attribute(classDir.resolve("node_name"), "0x5006016" + wwpn.substring(wwpn.length() - 9));
        attribute(classDir.resolve("port_state"), state);
        attribute(classDir.resolve("scsi_target_id"), Integer.toString(scsiTargetId));
        attribute(classDir.resolve("roles"), roles);
        link(sys.resolve("class/fc_remote_ports/" + name), classDir);
        if (scsiTargetId >= 0) {
            // The SCSI target (targetH:C:T, its fc_transport entry) comes with the first disk: see addDisk.
            String target = host + ":" + channel + ":" + scsiTargetId;
            targetParents.put(target, rportDir);
            fcTargets.put(target, wwpn);
        }
        return this;
    }

    /**
     * What the kernel does when a remote port's dev_loss_tmo runs out: the port is "Not Present" with roles
     * "unknown" (its target id stays), and its SCSI target and every disk behind it are removed.
     */
    public synchronized void loseRemotePort(int host, int channel, int number) throws IOException {
        String name = "rport-" + host + ":" + channel + "-" + number;
        Path classDir = scsiHost(host).resolve(name).resolve("fc_remote_ports/" + name);
        attribute(classDir.resolve("port_state"), "Not Present");
        attribute(classDir.resolve("roles"), "unknown");
        Path rportDir = scsiHost(host).resolve(name);
        for (Disk disk : List.copyOf(disks.values())) {
            if (disk.deviceDir().startsWith(rportDir)) {
                removeDisk(disk.name());
            }
        }
    }

    /** The SCSI targets the kernel shows now: "H:C:T" of every targetH:C:T directory. */
    public synchronized List<String> scsiTargets() throws IOException {
        List<String> targets = new ArrayList<>();
        for (Map.Entry<String, Path> entry : targetParents.entrySet()) {
            if (Files.isDirectory(entry.getValue().resolve("target" + entry.getKey()))) {
                targets.add(entry.getKey());
            }
        }
        return targets;
    }

    /**
     * An iSCSI session as open-iscsi leaves it after login: SCSI host H with .../hostH/sessionN/targetH:0:0,
     * the iscsi_session and iscsi_connection class entries, and LUNs of the session under its target.
     */
    public synchronized FakeSysfs iscsiSession(int session, int host, String iqn, String address, int port)
            throws IOException {
        // The kernel numbers sessions from one counter that only grows (iscsi_session_nr), and the plugin relies on it
        // (IscsiSessions remembers each number's target): a test that gave a number twice would test another kernel.
        if (!sessionNumbers.add(session)) {
            throw new IllegalStateException("session" + session + " was made before in this tree: the kernel never"
                    + " gives a session number twice; give the new session the next free number");
        }
        // As with node.session.scan=manual: no target dir until a LUN is scanned (see scanned()).
        Path sessionDir = scsiHost(host).resolve("session" + session);
        Files.createDirectories(sessionDir);
        String target = host + ":0:0";
        targetParents.put(target, sessionDir);
        Path classEntry = sys.resolve("class/iscsi_session/session" + session);
        attribute(classEntry.resolve("targetname"), iqn);
        attribute(classEntry.resolve("ifacename"), "default");
        attribute(classEntry.resolve("target_id"), "0");
        attribute(classEntry.resolve("state"), "LOGGED_IN");
        link(classEntry.resolve("device"), sessionDir);
        Path connection = sys.resolve("class/iscsi_connection/connection" + session + ":0");
        attribute(connection.resolve("persistent_address"), address);
        attribute(connection.resolve("persistent_port"), Integer.toString(port));
        return this;
    }

    /** The session's state as iscsid's recovery leaves it: LOGGED_IN, FAILED, REOPEN, FREE. */
    public synchronized void setIscsiSessionState(int session, String state) throws IOException {
        attribute(sys.resolve("class/iscsi_session/session" + session + "/state"), state);
    }

    /**
     * A logout under way: the session's SCSI target (and so its disks' addresses) is gone and the kernel has set its
     * target_id to -1, while its class entry still says LOGGED_IN.
     */
    public synchronized void iscsiSessionTearingDown(int session, int host) throws IOException {
        deleteTree(scsiHost(host).resolve("session" + session).resolve("target" + host + ":0:0"));
        attribute(sys.resolve("class/iscsi_session/session" + session + "/target_id"), "-1");
    }

    /** What logout does: the session, its class entries and its target go away. */
    public synchronized void removeIscsiSession(int session, int host) throws IOException {
        deleteTree(sys.resolve("class/iscsi_session/session" + session));
        deleteTree(sys.resolve("class/iscsi_connection/connection" + session + ":0"));
        deleteTree(scsiHost(host).resolve("session" + session));
        targetParents.remove(host + ":0:0");
    }

    public Path scanFile(int host) {
        return sys.resolve("class/scsi_host/host" + host + "/scan");
    }

    // ---- disks -----------------------------------------------------------------------------------

    /**
     * A LUN that answers a targeted scan of {@code address}: its disk appears when the scan is written. With a
     * disk already there, this is the array putting another LUN at that number: the disk keeps the identity
     * it was probed with until its rescan is written.
     */
    public synchronized FakeSysfs presentLun(ScsiAddress address, String name, DeviceNumber number, String wwid,
                                             byte[] vpd83) {
        presented.put(address, new Presented(name, number, wwid, vpd83, "running"));
        return this;
    }

    /** The array stops presenting a LUN at {@code address}: a scan there finds nothing (a disk already there stays). */
    public synchronized void unpresentLun(ScsiAddress address) {
        presented.remove(address);
    }

    /** A disk present now, as after a scan: SCSI device, block device, class links, /dev node. */
    public synchronized Disk addDisk(ScsiAddress address, String name, DeviceNumber number, String wwid, byte[] vpd83,
                        String state) throws IOException {
        scsiHost(address.host());
        String target = address.host() + ":" + address.channel() + ":" + address.target();
        Path parent = targetParents.getOrDefault(target, hostDirs.get(address.host())).resolve("target" + target);
        if (fcTargets.containsKey(target) && !Files.isDirectory(parent)) {
            Path transport = parent.resolve("fc_transport/target" + target);
            String wwpn = fcTargets.get(target);
            attribute(transport.resolve("port_name"), wwpn);
            attribute(transport.resolve("node_name"), "0x5006016" + wwpn.substring(wwpn.length() - 9));
            link(sys.resolve("class/fc_transport/target" + target), transport);
        }
        Path deviceDir = parent.resolve(address.toString());
        attribute(deviceDir.resolve("state"), state);
        if (wwid != null) {
            attribute(deviceDir.resolve("wwid"), wwid);
        }
        if (vpd83 != null) {
            Files.write(deviceDir.resolve("vpd_pg83"), vpd83);
        }
        attribute(deviceDir.resolve("rescan"), "");
        attribute(deviceDir.resolve("delete"), "");
        Path scsiDevice = deviceDir.resolve("scsi_device/" + address);
        Files.createDirectories(scsiDevice);
        link(scsiDevice.resolve("device"), deviceDir);
        link(sys.resolve("class/scsi_device/" + address), scsiDevice);
        Path blockDir = deviceDir.resolve("block/" + name);
        blockDevice(blockDir, name, number);
        link(blockDir.resolve("device"), deviceDir);
        link(sys.resolve("class/block/" + name), blockDir);
        link(sys.resolve("block/" + name), blockDir);
        Files.createFile(dev.resolve(name));
        Disk disk = new Disk(address, name, number, deviceDir, blockDir);
        disks.put(name, disk);
        return disk;
    }

    public synchronized Disk addDisk(ScsiAddress address, String name, DeviceNumber number, String wwid)
            throws IOException {
        return addDisk(address, name, number, wwid, null, "running");
    }

    /** What the kernel does on delete: the disk and every link to it disappear. */
    public synchronized void removeDisk(String name) throws IOException {
        Disk disk = disks.remove(name);
        if (disk == null) {
            throw new IllegalStateException("no disk " + name);
        }
        // The maps that hold it, from its holders (kept in step with the maps' slaves here): a node with hundreds of
        // maps does not walk them all per disk, which would make the fake's drain of a burst (figure l) N^2.
        for (String holder : entries(disk.blockDir().resolve("holders"))) {
            Path mapDir = maps.get(holder);
            if (mapDir != null) {
                Files.deleteIfExists(mapDir.resolve("slaves/" + name));
            }
        }
        Files.deleteIfExists(sys.resolve("class/scsi_device/" + disk.address()));
        Files.deleteIfExists(sys.resolve("class/block/" + name));
        Files.deleteIfExists(sys.resolve("block/" + name));
        Files.deleteIfExists(sys.resolve("dev/block/" + disk.number()));
        Files.deleteIfExists(dev.resolve(name));
        deleteTree(disk.deviceDir());
        Path target = disk.deviceDir().getParent();
        boolean lastOfItsTarget = disks.values().stream().noneMatch(d -> d.deviceDir().getParent().equals(target));
        if (lastOfItsTarget) {
            // The kernel reaps a SCSI target with its last device (measured: nothing of it lingers).
            Files.deleteIfExists(sys.resolve("class/fc_transport/" + target.getFileName()));
            deleteTree(target);
        }
    }

    public synchronized void setState(String name, String state) throws IOException {
        attribute(disks.get(name).deviceDir().resolve("state"), state);
    }

    public boolean hasDisk(String name) {
        return Files.exists(sys.resolve("class/block/" + name));
    }

    public synchronized List<String> diskNames() {
        return List.copyOf(disks.keySet());
    }

    // ---- device-mapper ---------------------------------------------------------------------------

    /** A dm multipath map dm-MINOR named {@code name} with uuid "mpath-" + wwid over {@code slaves}. */
    public synchronized Path addMap(int minor, String name, String wwid, List<String> slaves) throws IOException {
        return addDm(minor, name, "mpath-" + wwid, slaves);
    }

    /** A block device with no SCSI below it (a loop device, a virtio disk): sysfs entries and a /dev node. */
    public synchronized Path addBlockDevice(String name, DeviceNumber number) throws IOException {
        Path blockDir = sys.resolve("devices/virtual/block/" + name);
        blockDevice(blockDir, name, number);
        link(sys.resolve("class/block/" + name), blockDir);
        link(sys.resolve("block/" + name), blockDir);
        return Files.createFile(dev.resolve(name));
    }

    /**
     * A block device whose sysfs directory is {@code blockDir}, wherever the kernel puts it (an NVMe head under
     * its subsystem, a namespace under its controller): attributes, class and dev links, /dev node.
     */
    public synchronized Path addBlockDeviceAt(Path blockDir, String name, DeviceNumber number) throws IOException {
        blockDevice(blockDir, name, number);
        link(sys.resolve("class/block/" + name), blockDir);
        link(sys.resolve("block/" + name), blockDir);
        return Files.createFile(dev.resolve(name));
    }

    /** What the kernel does when such a device goes: its directory, links and /dev node disappear. */
    public synchronized void removeBlockDeviceAt(Path blockDir, String name, DeviceNumber number) throws IOException {
        Files.deleteIfExists(sys.resolve("class/block/" + name));
        Files.deleteIfExists(sys.resolve("block/" + name));
        Files.deleteIfExists(sys.resolve("dev/block/" + number));
        Files.deleteIfExists(dev.resolve(name));
        deleteTree(blockDir);
    }

    /** Any dm device (an LVM volume on a map, a kpartx partition...). */
    public synchronized Path addDm(int minor, String name, String uuid, List<String> slaves) throws IOException {
        String kernelName = "dm-" + minor;
        Path dmDir = sys.resolve("devices/virtual/block/" + kernelName);
        blockDevice(dmDir, kernelName, new DeviceNumber(253, minor));
        attribute(dmDir.resolve("dm/name"), name);
        attribute(dmDir.resolve("dm/uuid"), uuid);
        link(sys.resolve("class/block/" + kernelName), dmDir);
        link(sys.resolve("block/" + kernelName), dmDir);
        Files.createFile(dev.resolve(kernelName));
        maps.put(kernelName, dmDir);
        for (String slave : slaves) {
            Path lower = sys.resolve("class/block/" + slave).toRealPath();
            link(dmDir.resolve("slaves/" + slave), lower);
            link(lower.resolve("holders/" + kernelName), dmDir);
        }
        return dmDir;
    }

    /** What {@code multipathd add path} does to a map that exists: the disk becomes one of its slaves. */
    public synchronized void addSlave(String mapKernelName, String slave) throws IOException {
        Path dmDir = maps.get(mapKernelName);
        if (dmDir == null) {
            throw new IllegalStateException("no dm device " + mapKernelName);
        }
        Path lower = sys.resolve("class/block/" + slave).toRealPath();
        link(dmDir.resolve("slaves/" + slave), lower);
        link(lower.resolve("holders/" + mapKernelName), dmDir);
    }

    /** What a successful dm remove does: the map and the holder links of its slaves disappear. */
    public synchronized void removeMap(String kernelName) throws IOException {
        Path dmDir = maps.remove(kernelName);
        if (dmDir == null) {
            throw new IllegalStateException("no dm device " + kernelName);
        }
        // Its slaves' holder links (disks or maps below it), found through its own slaves, not a walk of the node.
        for (String slave : entries(dmDir.resolve("slaves"))) {
            Path lower = dmDir.resolve("slaves/" + slave);
            if (Files.exists(lower)) {
                Files.deleteIfExists(lower.toRealPath().resolve("holders/" + kernelName));
            }
        }
        Files.deleteIfExists(sys.resolve("class/block/" + kernelName));
        Files.deleteIfExists(sys.resolve("block/" + kernelName));
        Files.deleteIfExists(sys.resolve("dev/block/253:" + kernelName.substring(3)));
        Files.deleteIfExists(dev.resolve(kernelName));
        deleteTree(dmDir);
    }

    public boolean hasMap(String kernelName) {
        return Files.exists(sys.resolve("class/block/" + kernelName));
    }

    // ---- the writer --------------------------------------------------------------------------------

    /**
     * The next {@code times} writes to {@code attribute} fail with {@code reason} and change nothing, as the
     * kernel's EBUSY from a device delete does while the device is still open.
     */
    public synchronized void failWrites(Path attribute, int times, String reason) throws IOException {
        failingWrites.put(attribute.toRealPath(), times);
        failureReason = reason;
    }

    /** The writes that failed as {@link #failWrites} asked. */
    public synchronized List<Write> failedWrites() {
        return List.copyOf(failedWrites);
    }

    private String failureReason = "";

    @Override
    public synchronized void write(Path attribute, String value) throws IOException {
        Path target = Files.exists(attribute) ? attribute.toRealPath() : attribute;
        Integer left = failingWrites.get(target);
        if (left != null && left > 0) {
            failingWrites.put(target, left - 1);
            failedWrites.add(new Write(attribute, value));
            throw new FileSystemException(attribute.toString(), null, failureReason);
        }
        writes.add(new Write(attribute, value));
        SysfsWriter.DIRECT.write(attribute, value);
        Path real = attribute.toRealPath();
        String file = real.getFileName().toString();
        if (file.equals("scan")) {
            if (value.contains("-")) {
                throw new AssertionError("wildcard scan \"" + value + "\" of " + attribute + ": scans must be targeted");
            }
            scanned(Integer.parseInt(real.getParent().getFileName().toString().substring("host".length())), value);
        } else if (file.equals("delete") && value.strip().equals("1")) {
            Optional<Disk> disk = diskIn(real.getParent());
            if (disk.isPresent()) {
                removeDisk(disk.get().name());
            }
        } else if (file.equals("rescan") && value.strip().equals("1")) {
            Optional<Disk> disk = diskIn(real.getParent());
            if (disk.isPresent()) {
                reprobeIdentity(disk.get());
            }
        }
    }

    private Optional<Disk> diskIn(Path deviceDir) {
        return disks.values().stream().filter(d -> d.deviceDir().equals(deviceDir)).findFirst();
    }

    /**
     * A rescan re-reads the VPD pages: the disk now names the LUN presented at its address. Where nothing is
     * presented (the LUN is gone), the inquiry fails and the kernel keeps what it had.
     */
    private void reprobeIdentity(Disk disk) throws IOException {
        Presented lun = presented.get(disk.address());
        if (lun == null) {
            return;
        }
        Files.deleteIfExists(disk.deviceDir().resolve("wwid"));
        Files.deleteIfExists(disk.deviceDir().resolve("vpd_pg83"));
        if (lun.wwid() != null) {
            attribute(disk.deviceDir().resolve("wwid"), lun.wwid());
        }
        if (lun.vpd83() != null) {
            Files.write(disk.deviceDir().resolve("vpd_pg83"), lun.vpd83());
        }
    }

    public synchronized List<Write> writes() {
        return List.copyOf(writes);
    }

    /** Every write, as "relative/path/under/sys=value", in order. */
    public synchronized List<String> writeLog() {
        return writes.stream().map(w -> sys.relativize(w.attribute()) + "=" + w.value()).toList();
    }

    public String read(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8);
    }

    private void scanned(int host, String value) throws IOException {
        String[] parts = value.strip().split("\\s+");
        if (parts.length != 3) {
            throw new AssertionError("malformed scan \"" + value + "\" for host" + host);
        }
        ScsiAddress address = new ScsiAddress(host, Integer.parseInt(parts[0]), Integer.parseInt(parts[1]),
                Long.parseLong(parts[2]));
        Presented lun = presented.get(address);
        boolean present = disks.values().stream().anyMatch(d -> d.address().equals(address));
        if (lun != null && !present) {
            addDisk(address, lun.name(), lun.number(), lun.wwid(), lun.vpd83(), lun.state());
        }
    }

    // ---- helpers -------------------------------------------------------------------------------------

    /** The names in a directory; none when it does not exist. */
    private static List<String> entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (var listed = Files.list(dir)) {
            return listed.map(p -> p.getFileName().toString()).toList();
        }
    }

    private void blockDevice(Path blockDir, String name, DeviceNumber number) throws IOException {
        attribute(blockDir.resolve("dev"), number.toString());
        attribute(blockDir.resolve("size"), "2097152");
        attribute(blockDir.resolve("ro"), "0");
        attribute(blockDir.resolve("uevent"), "MAJOR=" + number.major() + "\nMINOR=" + number.minor()
                + "\nDEVNAME=" + name + "\nDEVTYPE=disk");
        Files.createDirectories(blockDir.resolve("holders"));
        Files.createDirectories(blockDir.resolve("slaves"));
        link(sys.resolve("dev/block/" + number), blockDir);
    }

    /** A text attribute as the kernel shows it: value and a newline. */
    public static void attribute(Path file, String value) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, value.isEmpty() ? "" : value + "\n", StandardCharsets.UTF_8);
    }

    /** A relative symlink, as sysfs has them. */
    public static void link(Path link, Path target) throws IOException {
        Files.createDirectories(link.getParent());
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, link.getParent().relativize(target));
    }

    public static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    static {
        // Fail fast if a test ever runs on a file system without symlinks: the fake would lie.
        try {
            Path probe = Files.createTempDirectory("fakesysfs");
            Files.createSymbolicLink(probe.resolve("l"), Path.of("."));
            deleteTree(probe);
        } catch (IOException e) {
            throw new UncheckedIOException("symlinks are needed to fabricate sysfs", e);
        }
    }
}
