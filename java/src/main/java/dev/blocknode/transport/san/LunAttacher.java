package dev.blocknode.transport.san;

import dev.blocknode.multipath.MountLookup;
import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.multipath.MultipathMaps;
import dev.blocknode.multipath.PathHealth;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.DeviceMapperControl;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDeviceState;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.Wwid;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The part of attaching and releasing a SCSI LUN that every SCSI transport shares, once the transport has
 * made the LUN reachable (FC: targeted scans behind remote ports; iSCSI: login, then targeted scans):
 * wait for the path disks, verify they are all the LUN that was asked for, put a multipath map over them
 * when there are several paths or multipathd runs, and, on release, take it all down again in the safe
 * order: map flushed and removed first, then each path flushed and deleted, retrying within a bound.
 */
public final class LunAttacher {

    private static final Logger LOG = Logger.getLogger(LunAttacher.class.getName());

    /**
     * How long to wait for path disks after a scan, for a map to be assembled, and for a complete release
     * (the in-tree FC plugin's fix retries its teardown for about a minute, inside the call).
     */
    public record Timeouts(Duration paths, Duration map, Duration release) {

        public static final Timeouts DEFAULTS =
                new Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60));
    }

    private final HostPaths paths;
    private final ScsiDevices devices;
    private final Multipath multipath;
    private final DeviceWaiter waiter;
    private final MultipathDaemon daemon;
    private final Timeouts timeouts;
    private final AttachedLunTracer tracer;
    private final LunRelease release;

    /** The attacher of a host's SCSI transports: multipath through the host's commands and mount table. */
    public static LunAttacher on(Host host, ScsiDevices devices, DeviceWaiter waiter, MultipathDaemon daemon,
                                 Timeouts timeouts) {
        Multipath multipath = new Multipath(host.commands(), new DeviceMapperControl(host.paths()),
                new MultipathMaps(host.paths()), waiter,
                MountLookup.of(host.mounter()));
        return new LunAttacher(host.paths(), devices, multipath, waiter, daemon, timeouts);
    }

    public LunAttacher(HostPaths paths, ScsiDevices devices, Multipath multipath, DeviceWaiter waiter,
                       MultipathDaemon daemon, Timeouts timeouts) {
        this.paths = paths;
        this.devices = devices;
        this.multipath = multipath;
        this.waiter = waiter;
        this.daemon = daemon;
        this.timeouts = timeouts;
        this.tracer = new AttachedLunTracer(paths, devices, multipath.maps());
        this.release = new LunRelease(devices, multipath);
    }

    /**
     * Uses the LUN at {@code addresses} (one per path; the caller has scanned them). Proceeds with the paths
     * that appeared within the paths timeout, saying which did not.
     *
     * @param expected WWIDs the LUN must match one of (empty: no expectation beyond path agreement)
     * @throws VolumeException NOT_FOUND when no path appeared; FAILED_PRECONDITION when the disks are not
     *                         the expected LUN or not all the same LUN; INTERNAL on host failures
     */
    public AttachedLun attach(String volumeId, List<ScsiAddress> addresses, List<Wwid> expected)
            throws VolumeException {
        Map<ScsiAddress, ScsiDisk> found = awaitDisks(volumeId, addresses);
        if (found.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + ": no disk appeared at " + addresses + " within "
                    + seconds(timeouts.paths()) + " of scanning; is the LUN mapped to this node's initiators?");
        }
        List<ScsiAddress> missing = addresses.stream().filter(a -> !found.containsKey(a)).toList();
        if (!missing.isEmpty()) {
            LOG.warning(() -> "volume " + volumeId + ": the LUN appeared through " + found.size() + " of "
                    + addresses.size() + " paths; none at " + missing + " (attaching with the paths found)");
        }
        return use(volumeId, List.copyOf(found.values()), expected, missing);
    }

    /**
     * Uses a LUN whose disks are already on the node (no scan), found by WWID: every SCSI disk matching any
     * of {@code wwids}.
     */
    public AttachedLun attachPresent(String volumeId, List<Wwid> wwids) throws VolumeException {
        List<ScsiDisk> matching = new ArrayList<>();
        try {
            for (ScsiDisk disk : devices.disks()) {
                Optional<LunIdentity> identity = devices.identity(disk);
                if (identity.isPresent() && identity.get().matchesAny(wwids)) {
                    matching.add(disk);
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot list the node's SCSI disks", e);
        }
        if (matching.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + ": no SCSI disk on this node has a WWID in "
                    + wwids);
        }
        return use(volumeId, matching, wwids, List.of());
    }

    /**
     * Releases everything of the LUN on this node: its multipath map (queueing disabled, {@code multipath -f})
     * and then each path (flushed, deleted), and checks it is gone. Keeps retrying for the release timeout;
     * devices already gone are fine; devices now at a recorded address that are another LUN are left alone.
     *
     * @throws VolumeException INTERNAL naming what is left when the time is up
     */
    public void release(AttachedLun lun) throws VolumeException {
        Instant deadline = waiter.deadlineAfter(timeouts.release());
        List<String> left = new ArrayList<>();
        try {
            waiter.until("LUN " + lun.wwid() + " to be released", deadline, () -> {
                left.clear();
                left.addAll(release.once(lun, deadline));
                return left.isEmpty() ? Optional.of(Boolean.TRUE) : Optional.empty();
            });
        } catch (WaitTimeoutException e) {
            throw VolumeException.internal("LUN " + lun.wwid() + " is not fully released after "
                    + seconds(timeouts.release()) + "; left: " + String.join("; ", left), null);
        } catch (IOException e) {
            throw VolumeException.internal("releasing LUN " + lun.wwid(), e);
        }
    }

    /**
     * The LUN under a device in use, traced through sysfs (map, slaves, their addresses, WWID): what
     * {@link #attach} returned for it, for a release whose staging record is gone.
     *
     * @throws VolumeException INTERNAL when sysfs cannot be read
     */
    public Optional<AttachedLun> traced(DeviceNumber device) throws VolumeException {
        try {
            return tracer.trace(device);
        } catch (IOException e) {
            throw VolumeException.internal("cannot trace device " + device + " to a SCSI LUN through sysfs", e);
        }
    }

    /**
     * How the recorded LUN's paths serve now (see {@link PathHealth}): for VolumeCondition and the path gauges.
     * Empty when the details name neither a map nor a path, or do not parse: our own attach always writes
     * details that do, and judging a volume's health is not the place to refuse its record (detach says so).
     */
    public Optional<PathHealth.Report> pathHealth(Map<String, String> details, Path device, DeviceNumber number)
            throws IOException {
        AttachedLun lun;
        try {
            lun = AttachedLun.fromDetails(details, device, number);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        return PathHealth.inspect(paths, lun.mapName(), lun.pathNames(), Optional.of(lun.number()));
    }

    /**
     * Gets the LUN's map over {@code names} and waits for it (the stage's step, and a repair's for a returned path).
     * The WWID is registered ({@code multipath -a}) only where the daemon needs it: one that takes every path
     * records it itself when it builds the map, and in a burst each such command costs seconds.
     */
    MultipathMap assembleMap(LunIdentity identity, List<String> names, boolean daemonRunning) throws IOException {
        boolean registerWwid = !daemonRunning || !daemon.takesEveryPath();
        return multipath.assemble(identity, names, daemonRunning, registerWwid, timeouts.map());
    }

    /** The multipath side, for callers that must undo a refused attach. */
    public Multipath multipath() {
        return multipath;
    }

    /**
     * After the storage grew the LUN: each path device re-reads its capacity, then the multipath map is
     * resized to it. The filesystem can grow only after both.
     */
    public void refreshSize(AttachedLun lun) throws VolumeException {
        try {
            for (AttachedLun.LunPath path : lun.paths()) {
                Optional<ScsiDisk> disk = devices.diskNamed(path.name());
                if (disk.isPresent()) {
                    devices.rescan(disk.get());
                }
            }
            if (lun.mapName().isPresent()) {
                Optional<MultipathMap> map = multipath.maps().byName(lun.mapName().get(), lun.number());
                if (map.isPresent()) {
                    multipath.resize(map.get());
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("re-reading the size of LUN " + lun.wwid(), e);
        }
    }

    /** The disks that appeared at {@code addresses} within the paths timeout, in their order (attach, path repair). */
    Map<ScsiAddress, ScsiDisk> awaitDisks(String volumeId, List<ScsiAddress> addresses)
            throws VolumeException {
        Map<ScsiAddress, ScsiDisk> found = new LinkedHashMap<>();
        try {
            waiter.within(timeouts.paths(), "disks at " + addresses, () -> {
                for (ScsiAddress address : addresses) {
                    if (!found.containsKey(address)) {
                        devices.diskAt(address).ifPresent(disk -> found.put(address, disk));
                    }
                }
                return found.size() == addresses.size() ? Optional.of(found) : Optional.empty();
            });
        } catch (WaitTimeoutException partial) {
            // proceed with what appeared; the caller decides whether that is enough
        } catch (InterruptedIOException e) {
            throw VolumeException.internal("volume " + volumeId + ": interrupted waiting for disks", e);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot look for disks at " + addresses, e);
        }
        Map<ScsiAddress, ScsiDisk> ordered = new LinkedHashMap<>();
        for (ScsiAddress address : addresses) {
            if (found.containsKey(address)) {
                ordered.put(address, found.get(address));
            }
        }
        return ordered;
    }

    private AttachedLun use(String volumeId, List<ScsiDisk> disks, List<Wwid> expected, List<ScsiAddress> missing)
            throws VolumeException {
        try {
            LunIdentity identity = verify(volumeId, disks, expected);
            requireARunningPath(volumeId, identity, disks);
            List<String> names = disks.stream().map(ScsiDisk::name).toList();
            boolean daemonRunning = daemon.isRunning();
            // Only a single path without the daemon may go without a map, and only if the LUN has none yet: the
            // look for one (which may read every map of the node) is made for that case alone.
            if (disks.size() == 1 && !daemonRunning && multipath.find(identity, names).isEmpty()) {
                ScsiDisk disk = disks.get(0);
                return new AttachedLun(identity.wwid(), List.of(path(disk)), Optional.empty(), disk.devicePath(),
                        disk.number(), missing);
            }
            MultipathMap map = assembleMap(identity, names, daemonRunning);
            List<AttachedLun.LunPath> lunPaths = verifyMap(volumeId, identity, map, disks);
            LOG.info(() -> "volume " + volumeId + ": LUN " + identity.wwid() + " through multipath map " + map
                    + " over " + map.slaves());
            // The map's WWID names the LUN from now on: release finds the map by it, and it matches every path.
            return new AttachedLun(map.wwid(), lunPaths, Optional.of(map.name()), map.devicePath(paths),
                    map.number(), missing);
        } catch (WaitTimeoutException e) {
            throw VolumeException.internal("volume " + volumeId + ": no multipath map appeared", e);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot set up the LUN's devices", e);
        }
    }

    /** All disks must be one LUN, and the expected one. */
    private LunIdentity verify(String volumeId, List<ScsiDisk> disks, List<Wwid> expected)
            throws IOException, VolumeException {
        Map<ScsiDisk, LunIdentity> identities = new LinkedHashMap<>();
        for (ScsiDisk disk : disks) {
            Optional<LunIdentity> identity = devices.identity(disk);
            if (identity.isEmpty()) {
                throw VolumeException.precondition("volume " + volumeId + ": disk " + disk + " reports no WWID"
                        + " (neither device/wwid nor device/vpd_pg83); refusing a device whose identity cannot be"
                        + " verified");
            }
            identities.put(disk, identity.get());
        }
        LunIdentity first = identities.get(disks.get(0));
        for (Map.Entry<ScsiDisk, LunIdentity> entry : identities.entrySet()) {
            if (!first.sameLunAs(entry.getValue())) {
                throw VolumeException.precondition("volume " + volumeId + ": refusing: the paths are not one LUN: "
                        + disks.get(0) + " is " + first.wwid() + " but " + entry.getKey() + " is "
                        + entry.getValue().wwid());
            }
            if (!expected.isEmpty() && !entry.getValue().matchesAny(expected)) {
                throw VolumeException.precondition("volume " + volumeId + ": refusing: disk " + entry.getKey()
                        + " is LUN " + entry.getValue().wwid() + ", not the expected " + expected);
            }
        }
        return first;
    }

    private void requireARunningPath(String volumeId, LunIdentity identity, List<ScsiDisk> disks)
            throws IOException, VolumeException {
        List<String> states = new ArrayList<>();
        for (ScsiDisk disk : disks) {
            ScsiDeviceState state = devices.state(disk);
            if (state.isRunning()) {
                return;
            }
            states.add(disk.name() + " " + state.sysfsName());
        }
        throw VolumeException.internal("volume " + volumeId + ": no path of LUN " + identity.wwid()
                + " is running: " + String.join(", ", states), null);
    }

    /** The map must be this LUN's, and so must every path in it (multipathd might have added others). */
    private List<AttachedLun.LunPath> verifyMap(String volumeId, LunIdentity identity, MultipathMap map,
                                                List<ScsiDisk> disks) throws IOException, VolumeException {
        if (!identity.matches(map.wwid())) {
            throw VolumeException.precondition("volume " + volumeId + ": refusing: multipath map " + map
                    + " holds the paths of LUN " + identity.wwid());
        }
        Map<String, AttachedLun.LunPath> lunPaths = new LinkedHashMap<>();
        for (ScsiDisk disk : disks) {
            lunPaths.put(disk.name(), path(disk));
        }
        for (String slave : map.slaves()) {
            Optional<ScsiDisk> disk = devices.diskNamed(slave);
            if (disk.isEmpty()) {
                continue;
            }
            Optional<LunIdentity> slaveIdentity = devices.identity(disk.get());
            if (slaveIdentity.isPresent() && !slaveIdentity.get().sameLunAs(identity)) {
                throw VolumeException.precondition("volume " + volumeId + ": refusing: multipath map " + map
                        + " has path " + disk.get() + " of LUN " + slaveIdentity.get().wwid() + ", not "
                        + identity.wwid());
            }
            lunPaths.putIfAbsent(slave, path(disk.get()));
        }
        return List.copyOf(lunPaths.values());
    }

    private static AttachedLun.LunPath path(ScsiDisk disk) {
        return new AttachedLun.LunPath(disk.address(), disk.name());
    }

    private static String seconds(Duration duration) {
        return duration.toMillis() % 1000 == 0 ? duration.toSeconds() + " s" : duration.toMillis() + " ms";
    }

    /** For callers holding only what a staging record keeps. */
    public static AttachedLun recorded(Map<String, String> details, Path device, DeviceNumber number)
            throws VolumeException {
        try {
            return AttachedLun.fromDetails(details, device, number);
        } catch (IllegalArgumentException e) {
            throw VolumeException.internal("the staging record's attachment details are unreadable: "
                    + e.getMessage(), null);
        }
    }
}
