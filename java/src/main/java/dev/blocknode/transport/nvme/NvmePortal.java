package dev.blocknode.transport.nvme;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/**
 * Where an NVMe/TCP subsystem listens: an IP literal (the kernel connects to addresses, it resolves no names)
 * and a TCP port, 4420 (the IANA NVMe/TCP port) unless given. Accepts "10.0.0.5", "10.0.0.5:4420",
 * "[fd00::5]:4420" and "fd00::5". Two spellings of one address are one portal: the kernel prints back
 * whatever spelling the connect used, so sysfs is compared by value, never as text.
 */
record NvmePortal(InetAddress address, int port) {

    static final int DEFAULT_PORT = 4420;

    NvmePortal {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("its port is out of range 1..65535");
        }
    }

    /**
     * Parses a portal from a request. The message of a failure describes the problem without repeating the
     * text, which is caller input.
     */
    static NvmePortal parse(String text) {
        String value = text.strip();
        String host;
        int port = DEFAULT_PORT;
        if (value.startsWith("[")) {
            int close = value.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("it opens an IPv6 bracket it does not close");
            }
            host = value.substring(1, close);
            String rest = value.substring(close + 1);
            if (!rest.isEmpty()) {
                port = port(rest);
            }
            if (host.indexOf(':') < 0) {
                throw new IllegalArgumentException("only IPv6 addresses go in brackets");
            }
        } else {
            int colon = value.indexOf(':');
            if (colon >= 0 && value.indexOf(':', colon + 1) < 0) {
                host = value.substring(0, colon);
                port = port(value.substring(colon));
            } else {
                host = value; // an IPv4 address without port, or a bare IPv6 address
            }
        }
        return new NvmePortal(literal(host), port);
    }

    /** The portal as sysfs shows a controller's {@code traddr} and {@code trsvcid}; empty text is no portal. */
    static NvmePortal ofSysfs(String traddr, String trsvcid) {
        try {
            return new NvmePortal(literal(traddr), Integer.parseInt(trsvcid.strip()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("trsvcid is not a port number");
        }
    }

    private static int port(String colonAndPort) {
        if (!colonAndPort.startsWith(":") || colonAndPort.length() < 2) {
            throw new IllegalArgumentException("it has no port after its colon");
        }
        try {
            return Integer.parseInt(colonAndPort.substring(1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("its port is not a number");
        }
    }

    /**
     * An IPv4 or IPv6 literal, never a name. Checked by shape first, so that getByName only ever parses a
     * literal and never asks a resolver.
     */
    private static InetAddress literal(String host) {
        if (host.isEmpty() || host.indexOf('%') >= 0) {
            throw new IllegalArgumentException("it has no IP address (scoped IPv6 addresses are not supported)");
        }
        boolean ipv4 = IPV4.matcher(host).matches();
        boolean ipv6 = host.indexOf(':') >= 0 && IPV6_CHARS.matcher(host).matches();
        if (!ipv4 && !ipv6) {
            throw new IllegalArgumentException("its address is not an IPv4 or IPv6 literal");
        }
        try {
            return InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("its address is not an IPv4 or IPv6 literal");
        }
    }

    private static final Pattern IPV4 = Pattern.compile(
            "((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");

    boolean isIpv6() {
        return address instanceof Inet6Address;
    }

    /** The address as the fabrics options string takes it: no brackets, canonical form. */
    String traddr() {
        return address.getHostAddress();
    }

    String trsvcid() {
        return Integer.toString(port);
    }

    /** "10.0.0.5:4420" or "[fd00::5]:4420": how records and messages name it, and what parse reads back. */
    @Override
    public String toString() {
        return (isIpv6() ? "[" + traddr() + "]" : traddr()) + ":" + port;
    }
}
