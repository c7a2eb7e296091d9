package dev.blocknode.transport.nvme;

import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The kernel's NVMe over Fabrics connect interface, /dev/nvme-fabrics: one write of the options string
 * ("transport=tcp,traddr=...,nqn=...") makes a controller, and a read on the same open file answers
 * "instance=N,cntlid=M" (the new controller is nvmeN). This is all nvme-cli does inside; doing it here needs
 * no tool on the node, keeps the DH-HMAC-CHAP keys out of every argv (nvme-cli takes them as arguments), names
 * the controller without parsing a tool's output, and takes options nvme-cli 2.3 lacks (fast_io_fail_tmo).
 * Tests substitute a fake that plays the kernel.
 */
@FunctionalInterface
interface FabricsDevice {

    /**
     * Writes {@code options} and returns the kernel's reply. The options may hold secrets: no implementation
     * may log them or put them in an exception message.
     *
     * @throws java.nio.file.NoSuchFileException when the device is missing (nvme-fabrics not loaded)
     * @throws IOException the kernel's refusal (its errno text), or no answer within {@code timeout}
     */
    String connect(String options, Duration timeout) throws IOException;

    /**
     * The kernel's ECONNREFUSED: the portal's address answered and nothing listens at its port (a target port
     * disabled, or not yet serving). Told apart because it costs the caller nothing whatever it took to say so: on a
     * loaded node the refusal itself came after more than 2 s in the VM tier.
     */
    final class ConnectionRefused extends IOException {
        ConnectionRefused(String message) {
            super(message);
        }
    }

    /** The JDK's text for a write that failed with ECONNREFUSED (strerror's, untranslated on a node's JVM). */
    String ECONNREFUSED_TEXT = "Connection refused";

    /**
     * The real device. The write blocks while the kernel connects (a TCP connect to an address that does not
     * answer can take minutes), so it runs on its own thread and the caller stops waiting at the timeout. The
     * kernel may still finish that connect later: the controller it makes is then found in sysfs like any other
     * (the next attach reuses it, the teardown or the undo deletes it), never lost.
     */
    static FabricsDevice of(HostPaths paths) {
        return (options, timeout) -> {
            CompletableFuture<String> reply = new CompletableFuture<>();
            Thread.ofPlatform().daemon().name("blocknode-nvme-connect").start(() -> {
                try {
                    reply.complete(writeAndRead(paths, options));
                } catch (IOException | RuntimeException e) {
                    reply.completeExceptionally(e);
                }
            });
            try {
                return reply.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new IOException("/dev/nvme-fabrics did not answer within " + timeout.toSeconds() + " s");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while connecting through /dev/nvme-fabrics");
            } catch (ExecutionException e) {
                if (e.getCause() instanceof IOException io) {
                    throw io;
                }
                throw new IOException("connecting through /dev/nvme-fabrics failed", e.getCause());
            }
        };
    }

    private static String writeAndRead(HostPaths paths, String options) throws IOException {
        try (FileChannel device = FileChannel.open(paths.dev().resolve("nvme-fabrics"), StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            ByteBuffer bytes = ByteBuffer.wrap(options.getBytes(StandardCharsets.US_ASCII));
            int expected = bytes.remaining();
            int written;
            try {
                written = device.write(bytes);
            } catch (IOException e) {
                // The message is the errno's text (EINVAL, EALREADY, ECONNREFUSED...); the options never reach it.
                String message = "the kernel refused the connect: " + e.getMessage();
                throw ECONNREFUSED_TEXT.equals(e.getMessage()) ? new ConnectionRefused(message)
                        : new IOException(message);
            }
            if (written != expected) {
                throw new IOException("short write to /dev/nvme-fabrics: " + written + " of " + expected + " bytes");
            }
            ByteBuffer answer = ByteBuffer.allocate(256);
            device.read(answer);
            return new String(answer.array(), 0, answer.position(), StandardCharsets.US_ASCII).strip();
        }
    }
}
