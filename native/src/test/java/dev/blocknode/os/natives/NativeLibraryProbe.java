package dev.blocknode.os.natives;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * main() for the forked JVMs of the tests: prints key=value lines about what it did.
 *
 * <ul>
 *   <li>{@code load}: NativeLibrary.load() from 8 threads at once, before LinuxNative is touched,
 *       then one native call.
 *   <li>{@code load-or-use}: half of 8 threads call NativeLibrary.load(), the other half make a native call
 *       first (LinuxNative's initializer loads it), all released at once; halts the JVM, saying so, if they are
 *       not done within 20 s (a deadlock between the two ways in).
 *   <li>{@code load-twice}: load() twice, reporting both outcomes (for a failing load).
 *   <li>{@code umount2 PATH}: LinuxNative.umount2(PATH, 0) and the exception it throws.
 * </ul>
 */
public final class NativeLibraryProbe {

    private NativeLibraryProbe() {
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "load" -> load();
            case "load-or-use" -> loadOrUse();
            case "load-twice" -> loadTwice();
            case "umount2" -> umount2(args[1]);
            default -> throw new IllegalArgumentException(args[0]);
        }
        System.out.flush();
    }

    private static void load() throws Exception {
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        List<Throwable> failures = new ArrayList<>();
        List<Thread> started = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    NativeLibrary.load();
                } catch (Throwable t) {
                    synchronized (failures) {
                        failures.add(t);
                    }
                }
            });
            thread.start();
            started.add(thread);
        }
        start.countDown();
        for (Thread thread : started) {
            thread.join();
        }
        System.out.println("failures=" + failures);
        System.out.println("loaded=" + NativeLibrary.isLoaded());
        System.out.println("loadFailure=" + NativeLibrary.loadFailure());
        long[] stat = LinuxNative.stat("/");
        System.out.println("rootIsDirectory=" + ((stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT) == LinuxNative.S_IFDIR));
        System.out.println("rootIsMountPoint=" + LinuxNative.isMountPoint("/"));
    }

    private static void loadOrUse() throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Throwable> failures = new ArrayList<>();
        List<Thread> started = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            boolean use = i % 2 == 1;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    if (use) {
                        LinuxNative.isMountPoint("/");
                    } else {
                        NativeLibrary.load();
                    }
                } catch (Throwable t) {
                    synchronized (failures) {
                        failures.add(t);
                    }
                }
            });
            thread.setDaemon(true);
            thread.start();
            started.add(thread);
        }
        start.countDown();
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (Thread thread : started) {
            thread.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            if (thread.isAlive()) {
                System.out.println("deadlocked=true");
                System.out.flush();
                Runtime.getRuntime().halt(3);
            }
        }
        System.out.println("deadlocked=false");
        System.out.println("failures=" + failures);
        System.out.println("loaded=" + NativeLibrary.isLoaded());
    }

    private static void loadTwice() {
        for (int i = 1; i <= 2; i++) {
            try {
                NativeLibrary.load();
                System.out.println("load" + i + "=ok");
            } catch (UnsatisfiedLinkError e) {
                System.out.println("load" + i + "=" + e.getClass().getName());
                System.out.println("load" + i + "Cause=" + (e.getCause() == NativeLibrary.loadFailure()));
            }
        }
        System.out.println("loaded=" + NativeLibrary.isLoaded());
        System.out.println("loadFailure=" + NativeLibrary.loadFailure());
    }

    private static void umount2(String path) {
        try {
            LinuxNative.umount2(path, 0);
            System.out.println("result=ok");
        } catch (NativeIOException e) {
            System.out.println("result=" + e.getClass().getSimpleName());
            System.out.println("syscall=" + e.syscall());
            System.out.println("path=" + e.path());
            System.out.println("errno=" + e.errno());
            System.out.println("errnoName=" + e.errnoName());
            System.out.println("message=" + e.getMessage());
        }
    }
}
