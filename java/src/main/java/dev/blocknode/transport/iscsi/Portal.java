package dev.blocknode.transport.iscsi;

import dev.blocknode.logging.Printable;

import java.util.Locale;

/**
 * An iSCSI portal: an address and a TCP port (3260 unless given). Accepts "10.0.0.5", "10.0.0.5:3261",
 * "[fd00::5]:3260" and "fd00::5"; prints the form iscsiadm takes.
 */
public record Portal(String address, int port) {

    public static final int DEFAULT_PORT = 3260;
    /** The longest DNS name; an IP address is shorter still. */
    static final int MAX_ADDRESS = 253;

    public Portal {
        if (address.isEmpty() || address.length() > MAX_ADDRESS
                || !address.chars().allMatch(c -> Character.isLetterOrDigit(c) || ".:-".indexOf(c) >= 0)) {
            throw new IllegalArgumentException("\"" + Printable.bounded(address, 80)
                    + "\" is not an IP address or host name");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " is out of range");
        }
        address = address.toLowerCase(Locale.ROOT);
    }

    public static Portal parse(String text) {
        String value = text.strip();
        if (value.startsWith("[")) {
            int close = value.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("\"" + text + "\" opens an IPv6 bracket it does not close");
            }
            String rest = value.substring(close + 1);
            int port = rest.isEmpty() ? DEFAULT_PORT : parsePort(text, rest);
            return new Portal(value.substring(1, close), port);
        }
        int colon = value.indexOf(':');
        if (colon >= 0 && value.indexOf(':', colon + 1) < 0) {
            return new Portal(value.substring(0, colon), parsePort(text, value.substring(colon)));
        }
        return new Portal(value, DEFAULT_PORT); // a bare host, or a bare IPv6 address
    }

    private static int parsePort(String text, String colonAndPort) {
        if (!colonAndPort.startsWith(":") || colonAndPort.length() < 2) {
            throw new IllegalArgumentException("\"" + text + "\" has no port after its colon");
        }
        try {
            return Integer.parseInt(colonAndPort.substring(1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("\"" + text + "\" has a port that is not a number");
        }
    }

    public boolean isIpv6() {
        return address.indexOf(':') >= 0;
    }

    /** The -p argument of iscsiadm: "10.0.0.5:3260" or "[fd00::5]:3260". */
    @Override
    public String toString() {
        return (isIpv6() ? "[" + address + "]" : address) + ":" + port;
    }
}
