package dev.blocknode.os.host;

import dev.blocknode.os.natives.NativeLibrary;

/**
 * The JNI library every syscall of the host's os implementations goes through, as the entry points see it:
 * loaded once at start, and a failed load reported by the health probe rather than crashing the plugin. Here so
 * that nothing above os depends on os.natives.
 */
public final class SyscallLibrary {

    private SyscallLibrary() {
    }

    /** Loads it now (it loads itself on first use otherwise); an UnsatisfiedLinkError when it cannot be. */
    public static void load() {
        NativeLibrary.load();
    }

    /** Whether it is loaded (never tries to load it). */
    public static boolean isLoaded() {
        return NativeLibrary.isLoaded();
    }

    /** Why the load failed; null when it succeeded or has not been tried. */
    public static Throwable loadFailure() {
        return NativeLibrary.loadFailure();
    }
}
