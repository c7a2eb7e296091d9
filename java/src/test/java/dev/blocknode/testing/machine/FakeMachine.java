package dev.blocknode.testing.machine;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.Mounter;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A machine in memory for the lifecycle's unit tier, in the spirit of mount-utils' FakeMounter: a tree of
 * directories, files, symlinks and device nodes, a mount table, the descriptors the plugin holds, and a log
 * of every mount, bind, unmount and removal. {@link #files()} opens paths in the tree beneath a
 * directory, refusing symlinks on the way exactly as the host's openat2 does; {@link #mounter()} is given
 * the /proc/self/fd paths of those descriptors and understands them. A failure can be injected for the next
 * operation at a path. Paths are the tree's own absolute paths (only the kubelet root is also a real
 * directory, because KubeletPaths resolves it once on disk).
 */
public final class FakeMachine {

    /** The filesystem the tree itself is on. */
    public static final DeviceNumber TREE_FILESYSTEM = new DeviceNumber(0, 42);
    /** devtmpfs, which device nodes are on (and what a device's bind mount shows in mountinfo). */
    public static final DeviceNumber DEVTMPFS = new DeviceNumber(0, 5);

    private static final Path DESCRIPTORS = Path.of("/proc/self/fd");

    private final FakeNode root = new FakeNode(FakeNode.Kind.DIRECTORY, TREE_FILESYSTEM, null);
    private final Map<Path, Deque<FakeMount>> mounts = new LinkedHashMap<>();
    private final Map<DeviceNumber, FakeNode> filesystems = new HashMap<>();
    private final java.util.Set<DeviceNumber> turnedReadOnly = new java.util.HashSet<>();
    private final Map<Path, DeviceNumber> deviceNodes = new HashMap<>();
    private final Map<Integer, FakeOpenedPath> descriptors = new HashMap<>();
    private final Map<DeviceNumber, long[]> filesystemSizes = new HashMap<>();
    private final Map<String, IOException> failures = new HashMap<>();
    private final List<String> actions = new ArrayList<>();
    private final FakeMounter mounter = new FakeMounter(this);
    private int nextDescriptor = 100;
    private int nextMountId = 100;

    /** Directories are opened beneath in the tree, whatever the resolution asked for. */
    public ConfinedDirectory.Opener files() {
        return (directory, resolution) -> new FakeConfinedDirectory(this, directory);
    }

    public Mounter mounter() {
        return mounter;
    }

    /** A Host whose paths, mounts and descriptors are this machine's, with the given commands and devices. */
    public Host host(HostPaths paths, CommandRunner commands, BlockDevices blockDevices) {
        return new Host(paths, commands, mounter, blockDevices, files());
    }

    // ---- what a test sets up and reads back ------------------------------------------------------

    /** A device node the mounter may mount or bind ({@code node} is the path the plugin names it by). */
    public synchronized void blockDevice(Path node, DeviceNumber number) {
        deviceNodes.put(node, number);
    }

    public synchronized void directories(Path path) {
        FakeNode node = root;
        Path at = Path.of("/");
        for (Path element : path) {
            at = at.resolve(element);
            FakeNode next = entry(node, at);
            if (next == null) {
                next = new FakeNode(FakeNode.Kind.DIRECTORY, node.device, null);
                node.entries.put(element.toString(), next);
            }
            node = next;
        }
    }

    /** Puts a symlink at {@code link} (its parent made as needed), replacing what was there. */
    public synchronized void symlink(Path link) {
        directories(link.getParent());
        FakeNode parent = visible(link.getParent());
        parent.entries.put(link.getFileName().toString(), new FakeNode(FakeNode.Kind.SYMLINK, parent.device, null));
    }

    /** A file with something in it, as a pod may leave in its volume's directory. */
    public synchronized void file(Path path) {
        directories(path.getParent());
        FakeNode parent = visible(path.getParent());
        parent.entries.put(path.getFileName().toString(), new FakeNode(FakeNode.Kind.FILE, parent.device, null));
    }

    /**
     * Removes {@code path} and everything beneath it, as kubelet removes a deleted pod's directory. A mount
     * beneath it is a test's mistake: the kernel refuses to remove a mount point (EBUSY).
     */
    public synchronized void removeTree(Path path) {
        if (mounts.keySet().stream().anyMatch(p -> p.startsWith(path))) {
            throw new IllegalStateException("a mount beneath " + path + " stops its removal");
        }
        FakeNode parent = visible(path.getParent());
        if (parent == null || parent.entries.remove(path.getFileName().toString()) == null) {
            throw new IllegalStateException("nothing to remove at " + path);
        }
    }

    /** Mounts the filesystem of {@code device} at {@code at} (a directory, made as needed), as a host would. */
    public synchronized void mountFilesystem(Path at, DeviceNumber device, String fsType) {
        directories(at);
        mount(at, filesystem(device), "/dev/block/" + device, fsType, device, "/");
    }

    /** What the kernel does to a filesystem after I/O errors: read-only wherever it is mounted. */
    public synchronized void turnReadOnly(DeviceNumber filesystem) {
        turnedReadOnly.add(filesystem);
    }

    synchronized boolean readOnly(FakeMount mount) {
        return mount.readOnly() || turnedReadOnly.contains(mount.device);
    }

    public synchronized boolean exists(Path path) {
        return visible(path) != null;
    }

    public synchronized boolean isMounted(Path path) {
        return mounts.containsKey(path);
    }

    /** The device whose filesystem or node the top mount at {@code path} shows. */
    public synchronized Optional<DeviceNumber> mountedDevice(Path path) {
        return top(path).map(m -> m.root.kind == FakeNode.Kind.BLOCK_DEVICE ? m.root.rdev : m.device);
    }

    /** The flags of the top mount at {@code path} ("rw", or those its bind was made with: "ro,0x3"). */
    public synchronized Optional<String> mountFlags(Path path) {
        return top(path).map(m -> m.flags);
    }

    public synchronized List<Path> mountPoints() {
        return List.copyOf(mounts.keySet());
    }

    /** Every change made to the machine, in order: "mount DEV -> PATH (TYPE)", "bind A -> B", "unmount P". */
    public synchronized List<String> actions() {
        return List.copyOf(actions);
    }

    public synchronized void clearActions() {
        actions.clear();
    }

    /**
     * The next {@code operation} ("mount", "bind", "unmount") at {@code path} fails so; a JNI exception is thrown
     * as the host's os implementations throw it, re-typed ({@link SyscallException#of}).
     */
    public synchronized void failNext(String operation, Path path, IOException failure) {
        failures.put(operation + " " + path, failure instanceof NativeIOException kernel
                ? SyscallException.of(kernel) : failure);
    }

    /**
     * The block size and block count of the filesystem on {@code device}, as its grow ioctls see and change them
     * (XFS_IOC_FSGEOMETRY, XFS_IOC_FSGROWFSDATA, EXT4_IOC_RESIZE_FS); 4 KiB blocks filling 1 GiB until set.
     */
    public synchronized void filesystemSize(DeviceNumber device, long blockSize, long blocks) {
        filesystemSizes.put(device, new long[] {blockSize, blocks});
    }

    /** {@code {block size, blocks}} of the filesystem on {@code device}. */
    public synchronized long[] filesystemSize(DeviceNumber device) {
        return filesystemSizes.getOrDefault(device, new long[] {4096, FakeOpenedPath.TOTAL_BYTES / 4096}).clone();
    }

    /** Descriptors opened and not closed: a lifecycle call must leave none. */
    public synchronized int openDescriptors() {
        return descriptors.size();
    }

    // ---- for the fake descriptors and mounter ------------------------------------------------------

    /** What {@code path} shows now, following no symlink and crossing mounts; null when nothing is there. */
    synchronized FakeNode visible(Path path) {
        FakeNode node = root;
        Path at = Path.of("/");
        for (Path element : path) {
            if (!node.isDirectory()) {
                return null;
            }
            at = at.resolve(element);
            node = entry(node, at);
            if (node == null) {
                return null;
            }
        }
        return node;
    }

    /** The entry at {@code path} of the directory {@code directory}, or the root of what is mounted there. */
    synchronized FakeNode entry(FakeNode directory, Path path) {
        Optional<FakeMount> mounted = top(path);
        if (mounted.isPresent()) {
            return mounted.get().root;
        }
        return directory.entries.get(path.getFileName().toString());
    }

    synchronized FileStat stat(Path path, FakeNode node) {
        boolean mountRoot = top(path).map(m -> m.root == node).orElse(false);
        DeviceNumber device = node.kind == FakeNode.Kind.BLOCK_DEVICE ? DEVTMPFS : node.device;
        return new FileStat(device, node.rdev == null ? new DeviceNumber(0, 0) : node.rdev, node.mode(),
                mountRoot ? FileStat.MountRoot.YES : FileStat.MountRoot.NO, node.inode);
    }

    synchronized FakeOpenedPath open(Path path, FakeNode node) {
        FakeOpenedPath opened = new FakeOpenedPath(this, nextDescriptor++, path, node);
        descriptors.put(opened.descriptor(), opened);
        return opened;
    }

    synchronized void closed(int descriptor) {
        descriptors.remove(descriptor);
    }

    static Path viaDescriptor(int descriptor) {
        return DESCRIPTORS.resolve(Integer.toString(descriptor));
    }

    /** The opened path a /proc/self/fd/N path names, when it names one. */
    synchronized Optional<FakeOpenedPath> descriptorOf(Path path) throws IOException {
        if (!path.startsWith(DESCRIPTORS) || path.getNameCount() < 4) {
            return Optional.empty();
        }
        FakeOpenedPath opened = descriptors.get(Integer.parseInt(path.getName(3).toString()));
        if (opened == null) {
            throw Errno.noEntry("open", path); // a closed descriptor: the kernel has no such link
        }
        return Optional.of(opened);
    }

    /** The tree path a path given to a syscall stands for: /proc/self/fd/N[/name] resolved through the table. */
    synchronized Path treePath(Path path) throws IOException {
        Optional<FakeOpenedPath> opened = descriptorOf(path);
        if (opened.isEmpty()) {
            return path;
        }
        Path at = opened.get().shown();
        return path.getNameCount() == 4 ? at : at.resolve(path.subpath(4, path.getNameCount()));
    }

    synchronized Optional<DeviceNumber> deviceNode(Path path) {
        return Optional.ofNullable(deviceNodes.get(path));
    }

    /** The one root directory of a device's filesystem: mounted twice, it shows the same tree, as in Linux. */
    synchronized FakeNode filesystem(DeviceNumber device) {
        return filesystems.computeIfAbsent(device, d -> new FakeNode(FakeNode.Kind.DIRECTORY, d, null));
    }

    synchronized FakeMount mount(Path at, FakeNode shown, String source, String fsType, DeviceNumber device,
                                 String rootInFilesystem) {
        FakeMount mount = new FakeMount(nextMountId++, at, shown, source, fsType, device, rootInFilesystem);
        mounts.computeIfAbsent(at, p -> new ArrayDeque<>()).push(mount);
        return mount;
    }

    synchronized Optional<FakeMount> top(Path path) {
        Deque<FakeMount> stack = mounts.get(path);
        return stack == null ? Optional.empty() : Optional.of(stack.peek());
    }

    synchronized boolean unmount(Path path) {
        Deque<FakeMount> stack = mounts.get(path);
        if (stack == null) {
            return false;
        }
        stack.pop();
        if (stack.isEmpty()) {
            mounts.remove(path);
        }
        return true;
    }

    synchronized List<FakeMount> table() {
        List<FakeMount> table = new ArrayList<>();
        mounts.values().forEach(stack -> stack.descendingIterator().forEachRemaining(table::add));
        return table;
    }

    synchronized void record(String action) {
        actions.add(action);
    }

    /** Throws the failure injected for {@code operation} at {@code path}, once. */
    synchronized void injected(String operation, Path path) throws IOException {
        IOException failure = failures.remove(operation + " " + path);
        if (failure != null) {
            throw failure;
        }
    }
}
