package dev.blocknode.transport.san;

import dev.blocknode.metrics.PathSweeps;
import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.OrphanSweep;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Deletes the disks, and flushes the multipath map, of a LUN that blocknode scanned in and that nothing needs any
 * more: a stage that died between its scan and the record that would have named the LUN (the record then lost or
 * removed), an unstage whose release failed after its record was gone, a LUN left on the node after its volume was
 * unmapped by the storage admin. For every SCSI transport; the transport says which LUNs its records name, where an
 * entry's LUN is now ({@link Targets}) and whose lock keeps a stage away meanwhile.
 *
 * <p>What "blocknode scanned it in" means: its {@link ScanJournal} has an entry for the transport, target and LUN,
 * written and fsynced before the scan. A disk at an address no entry names (an administrator's LUN, one scanned in by
 * a whole-host scan or a blocknode older than the journal) is never touched, nor is a map with such a disk among its
 * paths. What "nothing needs it" means, all of, for every disk of the LUN at a journaled address:
 * <ul>
 *   <li>no staging record of any phase names the target and LUN (read once, and again once the targets' locks are
 *       held: a stage records its intent before it takes that lock to scan);</li>
 *   <li>the disk reports a WWID, and nothing holds or mounts it but, at most, one multipath map of that WWID whose
 *       paths are all such disks, which nothing holds (no dm-crypt, no LVM over it), mounts or opens (device-mapper's
 *       open count is 0: a raw block user opens without O_EXCL, which no claim check sees).</li>
 * </ul>
 * Then the map is flushed and the disks deleted by the very code unstage uses ({@link LunAttacher#release}: map
 * first, a disk only while it is still that LUN, never a path from under a live map), and the entries dropped. An
 * entry whose target has no disk at its LUN (never appeared, or gone with its session) is only dropped. Anything that
 * fails a check is kept and reported ({@link OrphanSweep#kept}: health, the log, a gauge), never touched. Any record
 * that cannot be read stops the whole sweep: it may name any LUN. An entry whose lines are not what the transport
 * writes, field by field ({@link Targets#check}), is ignored with one warning: nothing it names is locked, looked up
 * or removed.
 */
public final class LeftoverLunSweep {

    private static final Logger LOG = Logger.getLogger(LeftoverLunSweep.class.getName());

    /** What a transport tells the sweep about its targets. */
    public interface Targets {

        /**
         * Checks that a journal entry's target lines and LUN are one of the transport's, by their format, before
         * anything of the entry is used.
         *
         * @throws IllegalArgumentException saying which line is not what the transport writes: the entry is ignored
         */
        void check(ScanJournal.Entry entry);

        /**
         * The entries every staging record of the transport names now, whatever its phase.
         *
         * @throws VolumeException when a record cannot be read: nothing is swept
         */
        Set<ScanJournal.Entry> named() throws VolumeException;

        /**
         * Every address the entry's LUN is reachable at now: one per connection to its target (iSCSI: the one
         * session of the entry's portal; FC: the target port as each HBA port sees it); none when its target has no
         * connection, and then the LUN has no disk through it.
         */
        List<ScsiAddress> addresses(ScanJournal.Entry entry) throws IOException;

        /** The lock a stage or unstage of the entry's target takes before it scans or logs out there. */
        KeyedLocks.Held lock(ScanJournal.Entry entry);
    }

    private final ScanJournal journal;
    private final ScsiDevices devices;
    private final Multipath multipath;
    private final LunAttacher attacher;
    private final BlockDevices blockDevices;
    private final HostPaths paths;

    LeftoverLunSweep(ScanJournal journal, ScsiDevices devices, LunAttacher attacher, BlockDevices blockDevices,
                     HostPaths paths) {
        this.journal = journal;
        this.devices = devices;
        this.multipath = attacher.multipath();
        this.attacher = attacher;
        this.blockDevices = blockDevices;
        this.paths = paths;
    }

    /** Registers the transport's series of what this sweep removes, at 0 from the start. */
    public static void register(String transport) {
        PathSweeps.register(transport, PathSweeps.DISK);
        PathSweeps.register(transport, PathSweeps.MAP);
    }

    public OrphanSweep sweep(String transport, Targets targets) throws VolumeException {
        List<ScanJournal.Entry> candidates = new ArrayList<>();
        try {
            for (ScanJournal.Entry entry : journal.all(transport)) {
                try {
                    targets.check(entry);
                    candidates.add(entry);
                } catch (IllegalArgumentException notATarget) {
                    journal.notAnEntry(entry, notATarget.getMessage());
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the SCSI scan journal; no disk or map is swept", e);
        }
        candidates.removeAll(targets.named());
        if (candidates.isEmpty()) {
            return OrphanSweep.NONE;
        }
        // One lock order for every pass, by target first (stages take one of these locks at a time, so no order of
        // theirs conflicts; a caller that must hold several takes them in this order).
        candidates.sort(Comparator.comparing(ScanJournal.Entry::orderKey));
        List<KeyedLocks.Held> held = new ArrayList<>();
        try {
            for (ScanJournal.Entry entry : candidates) {
                held.add(targets.lock(entry));
            }
            candidates.removeAll(targets.named()); // a stage recorded its intent meanwhile: the LUN is its own again
            return sweepUnneeded(transport, candidates, targets);
        } finally {
            for (int i = held.size() - 1; i >= 0; i--) {
                held.get(i).close();
            }
        }
    }

    /** A disk of a journaled LUN at an address its entry's target gives it now. */
    private record Leftover(ScanJournal.Entry entry, ScsiDisk disk) {
    }

    /** Called with the entries' locks held and no record naming any of them. */
    private OrphanSweep sweepUnneeded(String transport, List<ScanJournal.Entry> entries, Targets targets) {
        List<String> removed = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        Map<Wwid, List<Leftover>> byLun = new LinkedHashMap<>();
        for (ScanJournal.Entry entry : entries) {
            try {
                List<ScsiDisk> disks = new ArrayList<>();
                for (ScsiAddress address : targets.addresses(entry)) {
                    devices.diskAt(address).ifPresent(disks::add);
                }
                if (disks.isEmpty()) {
                    journal.forget(entry);
                    LOG.info(() -> "leftover sweep: dropped the scan journal's entry of " + entry + ": no staging"
                            + " record names it and it has no disk on this node");
                    continue;
                }
                for (ScsiDisk disk : disks) {
                    Optional<LunIdentity> identity = devices.identity(disk);
                    if (identity.isEmpty()) {
                        kept.add("disk " + disk + " of " + entry + ": no staging record names it, but it reports no"
                                + " WWID, so what holds it cannot be shown to be its own; left in place");
                        continue;
                    }
                    byLun.computeIfAbsent(identity.get().wwid(), w -> new ArrayList<>()).add(new Leftover(entry, disk));
                }
            } catch (IOException e) {
                kept.add(entry + ": no staging record names it; looking at its disk failed: " + e.getMessage());
            }
        }
        for (Map.Entry<Wwid, List<Leftover>> lun : byLun.entrySet()) {
            sweepLun(transport, lun.getKey(), lun.getValue(), removed, kept);
        }
        return new OrphanSweep(removed, kept);
    }

    private void sweepLun(String transport, Wwid wwid, List<Leftover> leftovers, List<String> removed,
                          List<String> kept) {
        List<String> names = leftovers.stream().map(l -> l.disk().name()).toList();
        String what = "LUN " + wwid + " (disk(s) " + names + " of " + leftovers.stream().map(Leftover::entry)
                .distinct().toList() + ")";
        Optional<MultipathMap> map;
        try {
            Optional<String> refusal = refusal(wwid, leftovers);
            if (refusal.isPresent()) {
                kept.add(what + ": no staging record names it, but " + refusal.get() + "; left in place");
                return;
            }
            map = mapOf(leftovers);
        } catch (IOException e) {
            kept.add(what + ": no staging record names it; looking at what holds it failed: " + e.getMessage());
            return;
        }
        List<AttachedLun.LunPath> lunPaths = leftovers.stream()
                .map(l -> new AttachedLun.LunPath(l.disk().address(), l.disk().name())).toList();
        ScsiDisk first = leftovers.get(0).disk();
        AttachedLun lun = map.isPresent()
                ? new AttachedLun(map.get().wwid(), lunPaths, Optional.of(map.get().name()),
                        map.get().devicePath(paths), map.get().number(), List.of())
                : new AttachedLun(wwid, lunPaths, Optional.empty(), first.devicePath(), first.number(), List.of());
        try {
            attacher.release(lun);
        } catch (VolumeException e) {
            map.ifPresent(m -> PathSweeps.count(transport, PathSweeps.MAP, PathSweeps.FAILED));
            PathSweeps.count(transport, PathSweeps.DISK, PathSweeps.FAILED);
            LOG.warning(() -> "leftover sweep: cannot remove " + what + " (tried again next pass): " + e.getMessage());
            kept.add(what + ": no staging record names it; removing it failed: " + e.getMessage());
            return;
        }
        map.ifPresent(m -> {
            PathSweeps.count(transport, PathSweeps.MAP, PathSweeps.REMOVED);
            removed.add("multipath map " + m);
        });
        for (Leftover leftover : leftovers) {
            PathSweeps.count(transport, PathSweeps.DISK, PathSweeps.REMOVED);
            removed.add("disk " + leftover.disk() + " of " + leftover.entry());
        }
        LOG.info(() -> "leftover sweep: " + map.map(m -> "flushed multipath map " + m + " and ").orElse("")
                + "deleted " + what + ": no staging record names it, nothing mounts, holds or opens it, and"
                + " blocknode's scan journal says blocknode scanned it in");
        for (ScanJournal.Entry entry : leftovers.stream().map(Leftover::entry).distinct().toList()) {
            try {
                journal.forget(entry);
            } catch (IOException e) {
                LOG.warning(() -> "leftover sweep: cannot drop the scan journal's entry of " + entry
                        + " (dropped next pass): " + e.getMessage());
            }
        }
    }

    /** Why the LUN must stay, if it must: each check of the class comment, on every disk and on the map. */
    private Optional<String> refusal(Wwid wwid, List<Leftover> leftovers) throws IOException {
        List<String> names = leftovers.stream().map(l -> l.disk().name()).toList();
        Set<String> holderNames = new LinkedHashSet<>();
        for (Leftover leftover : leftovers) {
            ScsiDisk disk = leftover.disk();
            List<String> holders = devices.holders(disk.name());
            if (holders.isEmpty() && blockDevices.isClaimed(disk.devicePath())) {
                return Optional.of("disk " + disk + " is mounted or held open exclusively");
            }
            holderNames.addAll(holders);
        }
        if (holderNames.isEmpty()) {
            return Optional.empty();
        }
        if (holderNames.size() > 1) {
            return Optional.of("its disks are held by " + describe(holderNames));
        }
        String holder = holderNames.iterator().next();
        Optional<MultipathMap> map = multipath.maps().read(holder);
        if (map.isEmpty() || !map.get().wwid().matches(wwid)) {
            return Optional.of("its disks are held by " + describe(holderNames) + ", not a multipath map of that LUN");
        }
        List<String> unproven = map.get().slaves().stream().filter(s -> !names.contains(s)).toList();
        if (!unproven.isEmpty()) {
            return Optional.of("multipath map " + map.get() + " also has path(s) " + unproven + " that blocknode has no"
                    + " proof of having scanned in, or that a record names");
        }
        List<String> mapHolders = multipath.maps().holders(map.get());
        if (!mapHolders.isEmpty()) {
            return Optional.of("multipath map " + map.get() + " is held by " + mapHolders);
        }
        if (blockDevices.isClaimed(map.get().devicePath(paths))) {
            return Optional.of("multipath map " + map.get() + " is mounted or held open exclusively");
        }
        int open = multipath.openCount(map.get());
        if (open > 0) {
            return Optional.of("multipath map " + map.get() + " is open (" + open + " opener(s))");
        }
        return Optional.empty();
    }

    private Optional<MultipathMap> mapOf(List<Leftover> leftovers) throws IOException {
        for (Leftover leftover : leftovers) {
            Optional<MultipathMap> map = multipath.maps().holding(leftover.disk().name());
            if (map.isPresent()) {
                return map;
            }
        }
        return Optional.empty();
    }

    private String describe(Set<String> holders) throws IOException {
        List<String> described = new ArrayList<>();
        for (String holder : holders) {
            described.add(multipath.maps().describe(holder));
        }
        return String.join(", ", described);
    }
}
