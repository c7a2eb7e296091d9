package dev.blocknode.multipath;

import dev.blocknode.os.block.DeviceMapper;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.CommandTimeoutException;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.Wwid;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * dm-multipath through its own tools: have a map assembled for a LUN, and take one down safely. sysfs
 * ({@link MultipathMaps}) says what exists; the tools only act. Every step is safe to repeat.
 *
 * <p>Taking a map down goes through device-mapper's control node ({@link DeviceMapper}) where it can: a
 * {@code dmsetup} or {@code multipath -f} process costs 0.3-4 s on a loaded node ({@code multipath -f} reads its
 * configuration and every map first), several per volume in a burst of unstages. The tools remain the fallback.
 */
public final class Multipath {

    private static final Logger LOG = Logger.getLogger(Multipath.class.getName());
    private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);

    private final CommandRunner commands;
    private final DeviceMapper deviceMapper;
    private final MultipathMaps maps;
    private final DeviceWaiter waiter;
    private final MountLookup mounts;

    public Multipath(CommandRunner commands, DeviceMapper deviceMapper, MultipathMaps maps, DeviceWaiter waiter,
                     MountLookup mounts) {
        this.commands = commands;
        this.deviceMapper = deviceMapper;
        this.maps = maps;
        this.waiter = waiter;
        this.mounts = mounts;
    }

    public MultipathMaps maps() {
        return maps;
    }

    /**
     * The map of this LUN: one whose WWID names it, else one holding any of its paths. The paths' holders are
     * looked at first: a node has at most one map per LUN, so a holder naming the LUN is the answer, found
     * without reading every map of the node (with hundreds of LUNs staged, that walk was per wake-up of every
     * waiting stage).
     */
    public Optional<MultipathMap> find(LunIdentity identity, Collection<String> pathNames) throws IOException {
        Optional<MultipathMap> named = holderNaming(identity, pathNames);
        if (named.isPresent()) {
            return named;
        }
        for (MultipathMap map : maps.all()) {
            if (identity.matches(map.wwid())) {
                return Optional.of(map);
            }
        }
        for (String path : pathNames) {
            Optional<MultipathMap> holder = maps.holding(path);
            if (holder.isPresent()) {
                return holder;
            }
        }
        return Optional.empty();
    }

    /** As {@link #find}, from the paths' holders alone: one naming the LUN, else any holder. */
    private Optional<MultipathMap> holderOf(LunIdentity identity, Collection<String> pathNames) throws IOException {
        Optional<MultipathMap> named = holderNaming(identity, pathNames);
        if (named.isPresent()) {
            return named;
        }
        for (String path : pathNames) {
            Optional<MultipathMap> holder = maps.holding(path);
            if (holder.isPresent()) {
                return holder;
            }
        }
        return Optional.empty();
    }

    /** The map holding one of {@code pathNames} whose WWID names the LUN, if any: a look per path, no walk. */
    private Optional<MultipathMap> holderNaming(LunIdentity identity, Collection<String> pathNames) throws IOException {
        for (String path : pathNames) {
            Optional<MultipathMap> holder = maps.holding(path);
            if (holder.isPresent() && identity.matches(holder.get().wwid())) {
                return holder;
            }
        }
        return Optional.empty();
    }

    /**
     * Gets a map assembled over {@code pathNames} and waits for it. The WWID is registered first
     * ({@code multipath -a}) because with find_multipaths "yes"/"strict" multipathd ignores a WWID it has not
     * seen before. Then multipathd is asked to take each path not yet in the map, or, without the daemon,
     * {@code multipath WWID} builds the map itself. Failing tools are logged, not fatal: the map appearing is
     * what counts (multipathd may well have built it from the uevents already).
     *
     * <p>Waits until the map holds every path; at the deadline a map holding some of them is returned (the
     * others may join later), and no map at all is a {@link WaitTimeoutException}.
     */
    public MultipathMap assemble(LunIdentity identity, List<String> pathNames, boolean daemonRunning,
                                 Duration timeout) throws IOException {
        return assemble(identity, pathNames, daemonRunning, true, timeout);
    }

    /**
     * As {@link #assemble(LunIdentity, List, boolean, Duration)}, registering the WWID only when
     * {@code registerWwid}: a running daemon that takes every path ({@link MultipathDaemon#takesEveryPath})
     * builds the map and records the WWID by itself, and {@code multipath -a} is then one more process per
     * volume (seconds each in a burst) for nothing.
     */
    public MultipathMap assemble(LunIdentity identity, List<String> pathNames, boolean daemonRunning,
                                 boolean registerWwid, Duration timeout) throws IOException {
        Instant deadline = waiter.deadlineAfter(timeout);
        // What is decided here (done already? which paths to add?) depends only on maps holding the paths, so
        // their holders answer it; a map of the WWID over none of them would count as no map anyway.
        Optional<MultipathMap> existing = holderOf(identity, pathNames);
        if (existing.isPresent() && existing.get().slaves().containsAll(pathNames)) {
            return existing.get();
        }
        Wwid wwid = identity.wwid();
        if (registerWwid) {
            tryTool(Command.of("multipath", "-a", wwid.multipathForm()));
        }
        if (daemonRunning) {
            for (String path : pathNames) {
                if (existing.isEmpty() || !existing.get().slaves().contains(path)) {
                    tryTool(Command.of("multipathd", "add", "path", path));
                }
            }
        } else {
            tryTool(Command.of("multipath", wwid.multipathForm()));
        }
        List<MultipathMap> lastSeen = new ArrayList<>();
        try {
            // The map awaited holds every path, so each wake-up looks at the paths' holders only; the walk of
            // every map is left for the deadline, when a map holding none of them still counts.
            return waiter.until("multipath map of " + wwid + " over " + pathNames, deadline, () -> {
                Optional<MultipathMap> map = holderNaming(identity, pathNames);
                lastSeen.clear();
                map.ifPresent(lastSeen::add);
                return map.filter(m -> m.slaves().containsAll(pathNames));
            }, () -> lastSeen.isEmpty() ? "no map" : "map " + lastSeen.get(0) + " over " + lastSeen.get(0).slaves());
        } catch (WaitTimeoutException timeout2) {
            if (lastSeen.isEmpty()) {
                find(identity, pathNames).ifPresent(lastSeen::add);
            }
            if (!lastSeen.isEmpty()) {
                MultipathMap partial = lastSeen.get(0);
                LOG.warning(() -> "multipath map " + partial + " holds only " + partial.slaves() + " of " + pathNames
                        + " after " + timeout + "; using it");
                return partial;
            }
            throw timeout2;
        }
    }

    /**
     * Makes I/O on a map without paths fail instead of queueing forever, so that a flush cannot hang on a
     * LUN that is already unreachable. Best effort: the map may be gone already.
     */
    public void disableQueueing(MultipathMap map) throws IOException {
        try {
            if (!deviceMapper.message(map.name(), "fail_if_no_path")) {
                LOG.fine(() -> "multipath map " + map + " is gone already; no queueing to disable");
            }
            return;
        } catch (DeviceMapper.UnavailableException unavailable) {
            LOG.fine(unavailable::getMessage);
        } catch (InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            LOG.warning(() -> "multipath map " + map + ": fail_if_no_path not taken: " + e.getMessage());
            return;
        }
        tryTool(Command.of("dmsetup", "message", map.name(), "0", "fail_if_no_path"));
    }

    /**
     * Disables queueing, then removes the map, retrying until {@code deadline} while it is in use (a holder or
     * opener may be finishing). Returns once sysfs no longer has the map; a map already gone is fine. Never a
     * deferred remove: the map is gone on return, or the caller is told who holds it.
     *
     * @throws MapInUseException at the deadline, naming the map's holders and mounts
     */
    public void remove(MultipathMap map, Instant deadline) throws IOException {
        if (maps.refresh(map).isEmpty()) {
            return;
        }
        disableQueueing(map);
        String[] lastFailure = {""};
        try {
            waiter.until("multipath map " + map + " to be flushed and removed", deadline, () -> {
                if (maps.refresh(map).isEmpty()) {
                    return Optional.of(Boolean.TRUE);
                }
                Optional<String> failure = removeOnce(map);
                if (failure.isPresent()) {
                    lastFailure[0] = failure.get();
                    LOG.info(() -> "multipath map " + map + " not removed (will retry): " + failure.get());
                    return Optional.empty();
                }
                return maps.refresh(map).isEmpty() ? Optional.of(Boolean.TRUE) : Optional.empty();
            });
        } catch (WaitTimeoutException timeout) {
            throw new MapInUseException(map, users(map), lastFailure[0]);
        }
    }

    /**
     * One attempt at removing the map: what refused, if it was refused. DM_DEV_REMOVE where it can be used, else
     * {@code multipath -f}: with no control node or a kernel that does not take the call, and for a map that has
     * holders. A holder is most often a partition map (kpartx) on top, which {@code multipath -f} removes first
     * when nothing uses it, while DM_DEV_REMOVE of the map below answers EBUSY for as long as it stands.
     */
    private Optional<String> removeOnce(MultipathMap map) throws IOException {
        if (maps.holders(map).isEmpty()) {
            try {
                return switch (deviceMapper.remove(map.name())) {
                    case REMOVED, ABSENT -> Optional.empty();
                    case BUSY -> Optional.of("DM_DEV_REMOVE said: " + map.name() + " is open (EBUSY)");
                };
            } catch (DeviceMapper.UnavailableException unavailable) {
                LOG.fine(unavailable::getMessage);
            }
        }
        CommandResult result = commands.run(Command.of("multipath", "-f", map.name()).withTimeout(TOOL_TIMEOUT));
        return result.succeeded() ? Optional.empty() : Optional.of("multipath -f said: " + result.diagnostic());
    }

    /**
     * How many times the map is open now, as device-mapper counts it (DM_DEV_STATUS, else {@code dmsetup info}): a
     * process that opened it without O_EXCL (a raw block user, a test's file descriptor) is counted here and
     * nowhere in sysfs.
     */
    public int openCount(MultipathMap map) throws IOException {
        try {
            return deviceMapper.openCount(map.name());
        } catch (DeviceMapper.UnavailableException unavailable) {
            LOG.fine(unavailable::getMessage);
        }
        Command command = Command.of("dmsetup", "info", "-c", "--noheadings", "-o", "open", map.name())
                .withTimeout(TOOL_TIMEOUT);
        CommandResult result = commands.run(command);
        if (!result.succeeded()) {
            throw new CommandException(command, result, command.display() + " failed: " + result.diagnostic(), null);
        }
        try {
            return Integer.parseInt(result.stdout().strip());
        } catch (NumberFormatException e) {
            throw new IOException(command.display() + " answered no open count", e);
        }
    }

    /** Has multipathd re-read the size of the map's paths (after each path was rescanned). */
    public void resize(MultipathMap map) throws IOException {
        Command command = Command.of("multipathd", "resize", "map", map.name()).withTimeout(TOOL_TIMEOUT);
        CommandResult result = commands.run(command);
        if (!result.succeeded() || result.stdout().strip().equals("fail")) {
            throw new CommandException(command, result, command.display() + " failed: " + result.diagnostic(), null);
        }
    }

    /** What keeps the map busy, for an error message: holders from sysfs and mounts of its device. */
    public List<String> users(MultipathMap map) throws IOException {
        List<String> users = new ArrayList<>(maps.holders(map));
        for (Path mountPoint : mounts.mountPointsOf(map.number())) {
            users.add("mounted at " + mountPoint);
        }
        return users;
    }

    /**
     * Runs a tool whose failure is not fatal by itself: logs it. One that times out too (a loaded node: the map
     * may still come from the uevents, and the wait for it decides). A tool that cannot run at all is an error.
     */
    private void tryTool(Command command) throws CommandException {
        CommandResult result;
        try {
            result = commands.run(command.withTimeout(TOOL_TIMEOUT));
        } catch (CommandTimeoutException late) {
            LOG.warning(() -> late.getMessage() + "; waiting for the map regardless");
            return;
        }
        // multipathd's CLI answers "fail" with exit 0 in older releases: read the answer too.
        if (!result.succeeded() || result.stdout().strip().equals("fail")) {
            LOG.warning(() -> command.display() + " failed: " + result.diagnostic());
        }
    }
}
