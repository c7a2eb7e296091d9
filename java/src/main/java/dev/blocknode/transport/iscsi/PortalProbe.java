package dev.blocknode.transport.iscsi;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;

/**
 * Whether an iSCSI portal accepts a TCP connection now: what the path repair asks before it logs a gone session in
 * again. A login to a portal that does not answer tells nothing a connect does not, and costs iscsiadm's login
 * timeout and retries (tens of seconds) where a connect costs at most {@link #TIMEOUT}; so a portal that does not
 * answer is only waited for, never counted as a failed login: its login back-off does not grow and the volume is
 * not set aside, and the pass after the portal answers again logs it in.
 */
@FunctionalInterface
interface PortalProbe {

    /** Long against a round trip to a SAN portal, short against a pass. */
    Duration TIMEOUT = Duration.ofSeconds(2);

    boolean answers(Portal portal);

    /** A TCP connect from the node's routing table, closed at once (the target sees a connection with no login). */
    PortalProbe TCP = portal -> {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(portal.address(), portal.port()), (int) TIMEOUT.toMillis());
            return true;
        } catch (IOException | IllegalArgumentException | SecurityException noAnswer) {
            return false;
        }
    };

    /** For tests that script the logins themselves. */
    PortalProbe ALWAYS = portal -> true;
}
