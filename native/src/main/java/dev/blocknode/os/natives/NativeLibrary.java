package dev.blocknode.os.natives;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Loads libblocknode.so, once per JVM.
 *
 * <ul>
 *   <li>With {@code -Dblocknode.native.library=/path/libblocknode.so}: that file.
 *   <li>Otherwise: the classpath resource {@value #RESOURCE} (packaged in this module's jar),
 *       copied into a fresh private (0700) directory under {@code java.io.tmpdir} (or under
 *       {@code -Dblocknode.native.workdir=DIR}, for hosts whose /tmp is noexec), loaded, and
 *       deleted again: once loaded, the mapping stays valid without the file.
 * </ul>
 *
 * <p>A failed load is remembered and not retried: {@link #isLoaded()} and {@link #loadFailure()}
 * let a health probe report why instead of crashing, and every later {@link #load()} throws again.
 * {@link LinuxNative} loads it when first initialized, and {@link #load()} initializes LinuxNative.
 */
public final class NativeLibrary {

    /** System property naming the library file to load instead of the classpath resource. */
    public static final String LIBRARY_PROPERTY = "blocknode.native.library";
    /** System property naming the directory to extract the classpath resource into. */
    public static final String WORKDIR_PROPERTY = "blocknode.native.workdir";
    /** Where the library lives on the classpath. */
    public static final String RESOURCE = "/META-INF/native/linux-x86_64/libblocknode.so";

    private static final Object LOCK = new Object();
    private static volatile boolean loaded;
    private static volatile Throwable failure;
    /** True while this class's lock holder is inside System.load (guarded by LOCK). */
    private static boolean loading;

    private NativeLibrary() {
        throw new AssertionError("not instantiable");
    }

    /**
     * Loads the library if not done yet; idempotent and thread-safe. Always by way of {@link LinuxNative}'s static
     * initializer, which does the loading ({@link #loadForLinuxNative}): JNI_OnLoad binds LinuxNative's natives, which
     * needs LinuxNative initialized, so a thread that took this class's lock first would wait for an initializer
     * running in another thread, itself waiting for that lock, for ever. Through the initializer, every thread takes
     * the JVM's class-initialization lock first, and then this class's.
     *
     * @throws UnsatisfiedLinkError if this or an earlier call failed to load it; the cause is
     *     {@link #loadFailure()}
     */
    public static void load() {
        if (loaded) {
            return;
        }
        try {
            Class.forName(LinuxNative.class.getName(), true, NativeLibrary.class.getClassLoader());
        } catch (ClassNotFoundException impossible) {
            throw new AssertionError(impossible);
        } catch (LinkageError initializerFailed) {
            // ExceptionInInitializerError the first time, NoClassDefFoundError after: the load failed
        }
        if (!loaded) {
            throw unsatisfied();
        }
    }

    /** The load itself, under this class's lock: called by LinuxNative's static initializer alone. */
    static void loadForLinuxNative() {
        synchronized (LOCK) {
            if (loaded || loading) {
                // loading: a re-entrant call from this very thread, from inside System.load.
                return;
            }
            if (failure == null) {
                loading = true;
                try {
                    doLoad();
                    loaded = true;
                    return;
                } catch (Exception | LinkageError e) {
                    failure = e;
                } finally {
                    loading = false;
                }
            }
            throw unsatisfied();
        }
    }

    private static UnsatisfiedLinkError unsatisfied() {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("libblocknode could not be loaded: " + failure);
        error.initCause(failure);
        return error;
    }

    /** Whether the library has been loaded (does not try to load it). */
    public static boolean isLoaded() {
        return loaded;
    }

    /** Why loading failed, or null if it succeeded or has not been tried. */
    public static Throwable loadFailure() {
        return failure;
    }

    private static void doLoad() throws IOException {
        String explicit = System.getProperty(LIBRARY_PROPERTY);
        if (explicit != null && !explicit.isBlank()) {
            Path file = Path.of(explicit).toAbsolutePath();
            if (!Files.isRegularFile(file)) {
                throw new FileNotFoundException(
                        "-D" + LIBRARY_PROPERTY + "=" + explicit + ": no such file");
            }
            System.load(file.toString());
            return;
        }
        loadFromClasspath();
    }

    private static void loadFromClasspath() throws IOException {
        String workdir = System.getProperty(WORKDIR_PROPERTY);
        Path parent = Path.of(workdir != null && !workdir.isBlank()
                ? workdir : System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(parent, "blocknode-native-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path file = dir.resolve("libblocknode.so");
        try {
            try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new FileNotFoundException("classpath resource " + RESOURCE + " not found");
                }
                Files.copy(in, file);
            }
            System.load(file.toString());
        } finally {
            deleteQuietly(file);
            deleteQuietly(dir);
        }
    }

    // A leftover copy in a 0700 directory is harmless; it must not turn a good load into a failure.
    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            System.getLogger(NativeLibrary.class.getName()).log(
                    System.Logger.Level.WARNING, "could not delete " + path + ": " + e);
        }
    }
}
