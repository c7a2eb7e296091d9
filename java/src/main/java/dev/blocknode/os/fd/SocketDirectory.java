package dev.blocknode.os.fd;

import dev.blocknode.os.Errno;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * The directory of a listening Unix socket, held open by descriptor from before the bind until after the
 * listener is closed, so that every step on the socket file is taken in this directory and on the file this
 * process bound, never through a name someone else can change: the socket lives under the kubelet root, where
 * a hostile writer may rename entries and plant symlinks at any instant (README, "Threat model").
 *
 * <p>In order: {@link #open} (the directory by its configured name, once); {@link #removeStale}; the server
 * binds at {@link #bindAddress}, {@code /proc/self/fd/N/<name>}, so the kernel makes the socket file in this
 * very directory (bind never follows a symlink at the name itself: one there is EADDRINUSE); {@link #claim}
 * gives that file its mode and group, by descriptor, only once it is proved to be this process's listener;
 * {@link #close} once the listener is closed (its bind address names this descriptor until then).
 */
public final class SocketDirectory implements AutoCloseable {

    private static final Path OWN_DESCRIPTORS = Path.of("/proc/self/fd");
    private static final Logger LOG = Logger.getLogger(SocketDirectory.class.getName());

    private final Path socket;
    private final String name;
    private final int fd;
    private FileStat claimed; // guarded by this, like closed: a shutdown may come from another thread
    private boolean closed;

    private SocketDirectory(Path socket, String name, int fd) {
        this.socket = socket;
        this.name = name;
        this.fd = fd;
    }

    /**
     * Opens the directory of {@code socket}, creating it (and its missing parents) when absent. The directory is
     * the operator's configuration, found by name like --kubelet-root and --state-dir; from here on it is used
     * by descriptor only.
     */
    public static SocketDirectory open(Path socket) throws IOException {
        Path absolute = socket.toAbsolutePath();
        Path parent = absolute.getParent();
        if (parent == null || absolute.getFileName() == null) {
            throw new IllegalArgumentException("not a socket path: " + socket);
        }
        String name = OpenedPath.requireElement(absolute.getFileName().toString());
        Files.createDirectories(parent);
        return new SocketDirectory(socket, name, retyped(() -> LinuxNative.openDirectory(parent.toString())));
    }

    /** The socket's path as configured: for messages. */
    public Path socket() {
        return socket;
    }

    /** Where to bind the listener: the socket's name in this directory, reached through its descriptor. */
    public String bindAddress() {
        return OWN_DESCRIPTORS.resolve(Integer.toString(fd)).resolve(name).toString();
    }

    /**
     * Removes what a dead process left at the socket's name: anything but a directory, unless it is a socket
     * someone listens on, or a symlink that leads to one (both refused: a live server on the socket path is never
     * taken over, and kubelet, which follows the link, would reach that server there). The entry is looked at by
     * descriptor; a symlink is connected through once, only to see whether a server answers at its end (the
     * connection is closed at once, nothing sent), and is then removed, never what it points to. The entry is
     * removed from this directory only if the name still names what was looked at, and what was removed is logged.
     */
    public synchronized void removeStale() throws IOException {
        retyped(this::removeStaleNatively);
    }

    private void removeStaleNatively() throws IOException {
        requireOpen();
        int entry;
        try {
            entry = retyped(() -> LinuxNative.openBeneath(fd, name, 0));
        } catch (NoSuchPathException absent) {
            return;
        }
        try {
            FileStat stat = FileStat.of(LinuxNative.statAt(entry, ""));
            if (stat.isDirectory()) {
                throw new IOException(socket + " is a directory, not a socket path");
            }
            if (stat.isSocket() && answers(viaDescriptor(entry))) {
                throw new IOException("another server is already listening on " + socket + "; refusing to start");
            }
            // Connected through the name in this directory (the link followed as kubelet would follow it).
            if (stat.isSymlink() && answers(Path.of(bindAddress()))) {
                throw new IOException(socket + " is a symbolic link to " + linkTarget() + ", where another server"
                        + " is listening; refusing to start (a live server on the socket path is never taken over:"
                        + " remove the link if that server is not this driver's)");
            }
            String removed = describe(stat);
            long[] now = LinuxNative.statAt(fd, name);
            if (now == null) {
                return;
            }
            if (!FileStat.of(now).sameFileAs(stat)) {
                throw new IOException(socket + " was replaced while it was checked; refusing to start");
            }
            LinuxNative.unlinkAt(fd, name, false);
            LOG.log(stat.isSocket() ? Level.INFO : Level.WARNING, () -> "removed " + removed + " at " + socket
                    + ", where the socket is made");
        } finally {
            closeQuietly(entry);
        }
    }

    /** What is about to be removed, in words, for the log. */
    private String describe(FileStat stat) {
        if (stat.isSocket()) {
            return "a stale socket (no server answers on it)";
        }
        if (stat.isSymlink()) {
            return "a symbolic link to " + linkTarget() + " (no server answers there; what it points to is left as"
                    + " it is)";
        }
        return stat.isRegularFile() ? "a regular file" : "a file of mode " + Integer.toOctalString(stat.mode());
    }

    /** The target of the symlink at the name, for messages; read by the name, so it may have changed since. */
    private String linkTarget() {
        try {
            return Files.readSymbolicLink(Path.of(bindAddress())).toString();
        } catch (IOException | UnsupportedOperationException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    /**
     * Gives the socket file its {@code mode} and {@code group} once the entry at its name is proved to be the
     * socket this process's listener bound at {@link #bindAddress}: the entry is opened without following it
     * (O_PATH | O_NOFOLLOW) and must be a socket; a connection made through that descriptor must reach a
     * listener of this process (SO_PEERCRED names the process that called listen) bound with this very
     * address (getpeername), which no other live listener has: the address names this directory's descriptor,
     * held open until the listener is closed. The mode and group are then set through the descriptor
     * ({@code /proc/self/fd/N}, which leads to the opened file whatever its name is now), so nothing else is
     * ever changed.
     *
     * @throws IOException naming the socket when the name no longer leads to this process's socket (replaced,
     *                     renamed away): nothing was changed then, and the caller must not go on listening
     */
    public synchronized void claim(Set<PosixFilePermission> mode, Optional<GroupPrincipal> group)
            throws IOException {
        retyped(() -> claimNatively(mode, group));
    }

    private void claimNatively(Set<PosixFilePermission> mode, Optional<GroupPrincipal> group) throws IOException {
        requireOpen();
        int entry;
        try {
            entry = retyped(() -> LinuxNative.openBeneath(fd, name, 0));
        } catch (NoSuchPathException gone) {
            throw notOurs("nothing is there any more");
        }
        try {
            FileStat stat = FileStat.of(LinuxNative.statAt(entry, ""));
            if (!stat.isSocket()) {
                throw notOurs(stat.isSymlink() ? "a symlink is there now" : "what is there now is not a socket");
            }
            Path opened = viaDescriptor(entry);
            requireOwnListener(opened);
            Files.setPosixFilePermissions(opened, mode);
            if (group.isPresent()) {
                Files.getFileAttributeView(opened, PosixFileAttributeView.class).setGroup(group.get());
            }
            claimed = stat;
        } finally {
            closeQuietly(entry);
        }
    }

    /**
     * Removes the socket file from this directory if the name still names the one {@link #claim} claimed; nothing
     * once closed (the descriptor's number may name another file by then).
     */
    public synchronized void removeIfOurs() throws IOException {
        if (closed || claimed == null) {
            return;
        }
        long[] now = retyped(() -> LinuxNative.statAt(fd, name));
        if (now != null && FileStat.of(now).sameFileAs(claimed)) {
            retyped(() -> LinuxNative.unlinkAt(fd, name, false));
        }
    }

    /** Closes the directory: only once the listener is closed (its address names this descriptor). */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            closeQuietly(fd);
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the directory of " + socket + " is closed");
        }
    }

    private void requireOwnListener(Path opened) throws IOException {
        int connection;
        try {
            connection = LinuxNative.connectUnixSocket(opened.toString());
        } catch (NativeIOException e) {
            throw notOurs("no listener of this process answers on it: " + e.errnoName());
        }
        try {
            long pid = LinuxNative.peerCredentials(connection)[LinuxNative.PEER_PID];
            if (pid != ProcessHandle.current().pid()) {
                throw notOurs(pid == 0 ? "it is another process's listener" : "it is process " + pid + "'s listener");
            }
            if (!Arrays.equals(LinuxNative.peerAddress(connection), bindAddress().getBytes(StandardCharsets.UTF_8))) {
                throw notOurs("it is another listener of this process");
            }
        } finally {
            closeQuietly(connection);
        }
    }

    private IOException notOurs(String what) {
        return new IOException(socket + " no longer leads to the socket this process bound (" + what
                + "): it was replaced or renamed while the server started; not listening");
    }

    private static boolean answers(Path opened) {
        try {
            closeQuietly(LinuxNative.connectUnixSocket(opened.toString()));
            return true;
        } catch (NativeIOException e) {
            return Errno.of(e) == Errno.EAGAIN; // a listener whose backlog is full is live
        }
    }

    private static Path viaDescriptor(int entry) {
        return OWN_DESCRIPTORS.resolve(Integer.toString(entry));
    }

    private static void closeQuietly(int descriptor) {
        try {
            LinuxNative.close(descriptor);
        } catch (NativeIOException ignored) {
            // close(2) frees the descriptor even when it reports an error
        }
    }
}
