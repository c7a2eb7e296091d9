package dev.blocknode.transport.nvme;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NVMe controllers and their namespaces as the kernel shows them in sysfs: /sys/class/nvme/nvmeN with its
 * transport, address, subsystem, host and state, and under it one directory per namespace it reaches. With
 * native multipath that directory is a hidden path device nvmeScNnH whose disk is the subsystem's head
 * nvmeSnH (one head over every controller of the subsystem); without it, the namespace's own disk nvmeNnH.
 * Read from sysfs, not from a tool, so it is exact after a restart and costs a few small reads.
 */
final class NvmeControllers {

    private static final Pattern CONTROLLER = Pattern.compile("nvme\\d+");
    /** A path of a multipath head: nvme{subsystem}c{controller}n{head}. */
    private static final Pattern PATH = Pattern.compile("nvme(\\d+)c\\d+n(\\d+)");
    /** A namespace's own disk when native multipath is off, or the subsystem cannot have several controllers. */
    private static final Pattern DISK = Pattern.compile("nvme\\d+n\\d+");

    /** One controller. {@code portal} is empty for a transport without one (PCIe) or an unreadable address. */
    record Controller(String name, String transport, Optional<NvmePortal> portal, String subsystemNqn,
                      String hostNqn, String state, Path dir) {

        boolean serves(ControllerKey key) {
            return transport.equals("tcp") && portal.equals(Optional.of(key.portal()))
                    && subsystemNqn.equals(key.subsystemNqn()) && hostNqn.equals(key.hostNqn());
        }

        /** Being deleted, or dead: the kernel lets a new controller to the same place be connected. */
        boolean going() {
            return state.startsWith("deleting") || state.equals("dead");
        }

        boolean live() {
            return state.equals("live");
        }
    }

    /**
     * A namespace as one controller reaches it: the directory under the controller, the disk a volume uses
     * (the head, or the namespace's own disk), what it reports, and its ANA state (absent without ANA).
     */
    record NamespacePath(Controller controller, String name, String disk, NamespaceIdentity.Reported reported,
                         Optional<String> anaState) {
    }

    private final HostPaths host;

    NvmeControllers(HostPaths host) {
        this.host = host;
    }

    /** Every controller, in the kernel's order of instance numbers; one vanishing meanwhile is left out. */
    List<Controller> all() throws IOException {
        Path classDir = host.sys().resolve("class/nvme");
        List<Controller> found = new ArrayList<>();
        if (!Files.isDirectory(classDir)) {
            return found;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(classDir)) {
            for (Path entry : entries) {
                if (CONTROLLER.matcher(entry.getFileName().toString()).matches()) {
                    read(entry).ifPresent(found::add);
                }
            }
        }
        found.sort(Comparator.comparingInt(c -> Integer.parseInt(c.name().substring(4))));
        return found;
    }

    /** The controller a volume can use for {@code key}: the kernel's, unless it is being deleted. */
    Optional<Controller> usable(ControllerKey key) throws IOException {
        return all().stream().filter(c -> c.serves(key) && !c.going()).findFirst();
    }

    /** Every controller for {@code key}, going ones included: a teardown waits for those too. */
    List<Controller> serving(ControllerKey key) throws IOException {
        return all().stream().filter(c -> c.serves(key)).toList();
    }

    Optional<Controller> named(String name) throws IOException {
        Path entry = host.sys().resolve("class/nvme").resolve(name);
        return Files.exists(entry) ? read(entry) : Optional.empty();
    }

    /** The namespaces a controller reaches now (none while it is still scanning them). */
    List<NamespacePath> namespaces(Controller controller) throws IOException {
        List<NamespacePath> found = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(controller.dir())) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                Matcher path = PATH.matcher(name);
                String disk;
                if (path.matches()) {
                    disk = "nvme" + path.group(1) + "n" + path.group(2);
                } else if (DISK.matcher(name).matches()) {
                    disk = name;
                } else {
                    continue;
                }
                try {
                    found.add(new NamespacePath(controller, name, disk, reported(entry),
                            optional(entry.resolve("ana_state"))));
                } catch (NoSuchFileException vanished) {
                    // removed while being read
                }
            }
        } catch (NoSuchFileException gone) {
            return List.of();
        }
        found.sort(Comparator.comparing(NamespacePath::name));
        return found;
    }

    /** The device number of a disk (a head or a namespace's own disk), while it exists. */
    Optional<DeviceNumber> deviceNumber(String disk) throws IOException {
        Optional<String> dev = optional(host.sys().resolve("block").resolve(disk).resolve("dev"));
        if (dev.isEmpty()) {
            return Optional.empty();
        }
        String[] parts = dev.get().split(":");
        return Optional.of(new DeviceNumber(Integer.parseInt(parts[0]), Integer.parseInt(parts[1])));
    }

    /** The sysfs wwid of a disk: how multipath tools and udev (ID_WWN) name it. */
    Optional<String> wwid(String disk) throws IOException {
        return optional(host.sys().resolve("block").resolve(disk).resolve("wwid"));
    }

    /** The name of the disk with this device number, when it is an NVMe namespace's. */
    Optional<String> diskOf(DeviceNumber number) throws IOException {
        Path entry = host.sysBlockDevice(number);
        if (!Files.exists(entry)) {
            return Optional.empty();
        }
        String name = entry.toRealPath().getFileName().toString();
        return DISK.matcher(name).matches() ? Optional.of(name) : Optional.empty();
    }

    /** Every namespace path of every controller whose disk is {@code disk}: the paths of one volume. */
    List<NamespacePath> pathsOf(String disk) throws IOException {
        List<NamespacePath> paths = new ArrayList<>();
        for (Controller controller : all()) {
            for (NamespacePath path : namespaces(controller)) {
                if (path.disk().equals(disk)) {
                    paths.add(path);
                }
            }
        }
        return paths;
    }

    /** The value of a controller attribute, absent when the kernel does not have it (dhchap_secret on 6.1). */
    Optional<String> attribute(Controller controller, String name) throws IOException {
        return optional(controller.dir().resolve(name));
    }

    Path attributePath(Controller controller, String name) {
        return controller.dir().resolve(name);
    }

    private Optional<Controller> read(Path entry) throws IOException {
        try {
            Path dir = entry; // its /sys/class/nvme name, as writes and messages show it
            String transport = text(dir.resolve("transport"));
            Map<String, String> address = address(text(dir.resolve("address")));
            Optional<NvmePortal> portal = Optional.empty();
            if (address.containsKey("traddr") && address.containsKey("trsvcid")) {
                try {
                    portal = Optional.of(NvmePortal.ofSysfs(address.get("traddr"), address.get("trsvcid")));
                } catch (IllegalArgumentException unreadable) {
                    // a transport address of another form: not a portal this transport ever connects to
                }
            }
            return Optional.of(new Controller(entry.getFileName().toString(), transport, portal,
                    text(dir.resolve("subsysnqn")), optional(dir.resolve("hostnqn")).orElse(""),
                    text(dir.resolve("state")), dir));
        } catch (NoSuchFileException vanished) {
            return Optional.empty();
        }
    }

    /** "traddr=127.0.0.2,trsvcid=4420,src_addr=127.0.0.1" as keys and values. */
    private static Map<String, String> address(String text) {
        Map<String, String> fields = new HashMap<>();
        for (String field : text.split(",")) {
            int eq = field.indexOf('=');
            if (eq > 0) {
                fields.put(field.substring(0, eq).strip(), field.substring(eq + 1).strip());
            }
        }
        return fields;
    }

    private static NamespaceIdentity.Reported reported(Path dir) throws IOException {
        Optional<String> wwid = optional(dir.resolve("wwid"));
        Optional<String> nguid = optional(dir.resolve("nguid")).flatMap(NamespaceIdentity::nguidOf)
                .or(() -> wwid.filter(w -> w.startsWith("eui.")).flatMap(NamespaceIdentity::nguidOf));
        Optional<String> eui64 = optional(dir.resolve("eui")).flatMap(NamespaceIdentity::eui64Of)
                .or(() -> wwid.filter(w -> w.startsWith("eui.")).flatMap(NamespaceIdentity::eui64Of));
        Optional<String> uuid = optional(dir.resolve("uuid")).flatMap(NamespaceIdentity::uuidOf)
                .or(() -> wwid.filter(w -> w.startsWith("uuid.")).flatMap(NamespaceIdentity::uuidOf));
        OptionalLong nsid = OptionalLong.empty();
        Optional<String> nsidText = optional(dir.resolve("nsid"));
        if (nsidText.isPresent()) {
            try {
                nsid = OptionalLong.of(Long.parseLong(nsidText.get()));
            } catch (NumberFormatException unreadable) {
                // left unknown: an NSID that was asked for then does not match
            }
        }
        return new NamespaceIdentity.Reported(nguid, eui64, uuid, nsid);
    }

    private static String text(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8).strip();
    }

    private static Optional<String> optional(Path file) throws IOException {
        try {
            return Optional.of(text(file));
        } catch (NoSuchFileException absent) {
            return Optional.empty();
        }
    }
}
