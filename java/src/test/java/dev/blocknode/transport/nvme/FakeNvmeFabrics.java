package dev.blocknode.transport.nvme;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import static dev.blocknode.testing.FakeSysfs.attribute;
import static dev.blocknode.testing.FakeSysfs.link;

/**
 * The kernel's NVMe over Fabrics host, played in a fabricated sysfs: an array's subsystems (namespaces, the
 * portals they listen on), /dev/nvme-fabrics (a connect makes controller nvmeN, the subsystem, its heads and
 * the hidden path devices, as 6.1 lays them out) and the sysfs writes the transport makes (delete_controller
 * takes a controller away, and the subsystem with its last one). Like the kernel it refuses a second
 * controller to the same subsystem, portal and host with EALREADY, and, without CONFIG_NVME_AUTH, accepts a
 * dhchap_secret and connects unauthenticated.
 */
final class FakeNvmeFabrics implements FabricsDevice, SysfsWriter {

    /** A namespace on the array. */
    record Namespace(long nsid, String nguid, String uuid) {
    }

    private record Target(List<String> portals, List<Namespace> namespaces) {
    }

    private record Controller(int instance, String nqn, String portal, String hostNqn, Path dir) {
    }

    private final FakeSysfs sysfs;
    private final ManualClock clock;
    private final Map<String, Target> targets = new LinkedHashMap<>();
    private final Map<Integer, Controller> controllers = new LinkedHashMap<>();
    private final Map<String, Integer> subsystems = new LinkedHashMap<>();
    private final Map<String, Integer> heads = new LinkedHashMap<>(); // "nqn/nsid" -> head instance
    private final List<String> connects = new ArrayList<>();
    private final List<String> options = new ArrayList<>();
    private final Set<String> unreachable = new HashSet<>();
    private boolean kernelAuthenticates;
    private Duration namespacesAfter = Duration.ZERO;
    private CountDownLatch connectGate;
    private Duration failuresTake = Duration.ZERO;
    private boolean unreachableTimesOut;
    private String connectsAsHostId;
    private int nextController;
    private int nextSubsystem;
    private int nextHead = 1;
    private int nextMinor;

    FakeNvmeFabrics(FakeSysfs sysfs, ManualClock clock) throws IOException {
        this.sysfs = sysfs;
        this.clock = clock;
        Files.createDirectories(sysfs.sys().resolve("class/nvme"));
        attribute(sysfs.sys().resolve("module/nvme_core/parameters/multipath"), "Y");
    }

    /** An array subsystem listening on {@code portals} ("addr:port" as the kernel prints them). */
    FakeNvmeFabrics subsystem(String nqn, List<String> portals, Namespace... namespaces) {
        targets.put(nqn, new Target(List.copyOf(portals), List.of(namespaces)));
        return this;
    }

    /** A kernel with CONFIG_NVME_AUTH: controllers show dhchap_secret (and dhchap_ctrl_secret). */
    FakeNvmeFabrics authenticating() {
        kernelAuthenticates = true;
        return this;
    }

    /** The namespaces of a new controller appear this long after its connect (the kernel scans them later). */
    FakeNvmeFabrics namespacesAppearAfter(Duration delay) {
        namespacesAfter = delay;
        return this;
    }

    /** Every connect blocks until the gate opens (for tests of concurrent attaches). */
    FakeNvmeFabrics connectsWaitFor(CountDownLatch gate) {
        connectGate = gate;
        return this;
    }

    /** A connect to an unreachable portal fails this long after it started (a loaded node; a portal that is silent). */
    FakeNvmeFabrics failedConnectsTake(Duration took) {
        failuresTake = took;
        return this;
    }

    /** A connect to an unreachable portal gets no answer (the real device's timeout) instead of ECONNREFUSED. */
    FakeNvmeFabrics unreachableTimesOut() {
        unreachableTimesOut = true;
        return this;
    }

    /**
     * New controllers are connected as host ID {@code id} whatever the connect asked (older kernels reuse the host
     * ID they first saw for a host NQN).
     */
    synchronized FakeNvmeFabrics connectsAsHostId(String id) {
        connectsAsHostId = id;
        return this;
    }

    synchronized List<String> connects() {
        return List.copyOf(connects);
    }

    synchronized List<String> options() {
        return List.copyOf(options);
    }

    @Override
    public String connect(String text, Duration timeout) throws IOException {
        if (connectGate != null) {
            try {
                connectGate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
        }
        synchronized (this) {
            options.add(text);
            Map<String, String> given = new LinkedHashMap<>();
            for (String option : text.split(",")) {
                int eq = option.indexOf('=');
                if (eq <= 0 || given.put(option.substring(0, eq), option.substring(eq + 1)) != null) {
                    throw new IOException("Invalid argument");
                }
            }
            String portal = portal(given.get("traddr"), given.get("trsvcid"));
            String nqn = given.get("nqn");
            String hostNqn = given.get("hostnqn");
            if (!"tcp".equals(given.get("transport")) || nqn == null || hostNqn == null) {
                throw new IOException("Invalid argument");
            }
            Target target = targets.get(nqn);
            if (target == null || !target.portals().contains(portal) || unreachable.contains(portal)) {
                clock.advance(failuresTake);
                throw unreachableTimesOut ? new IOException("/dev/nvme-fabrics did not answer within 30 s")
                        : new FabricsDevice.ConnectionRefused(FabricsDevice.ECONNREFUSED_TEXT);
            }
            for (Controller c : controllers.values()) {
                if (c.nqn().equals(nqn) && c.portal().equals(portal) && c.hostNqn().equals(hostNqn)
                        && !read(c.dir().resolve("state")).startsWith("deleting")) {
                    throw new IOException("Operation already in progress");
                }
            }
            connects.add(portal);
            int instance = nextController++;
            Path dir = sysfs.sys().resolve("devices/virtual/nvme-fabrics/ctl/nvme" + instance);
            String[] address = portal.startsWith("[") ? new String[]{portal.substring(1, portal.indexOf(']')),
                    portal.substring(portal.lastIndexOf(':') + 1)} : portal.split(":");
            attribute(dir.resolve("transport"), "tcp");
            attribute(dir.resolve("address"), "traddr=" + address[0] + ",trsvcid=" + address[1]
                    + ",src_addr=127.0.0.1");
            attribute(dir.resolve("state"), "live");
            attribute(dir.resolve("subsysnqn"), nqn);
            attribute(dir.resolve("hostnqn"), hostNqn);
            attribute(dir.resolve("hostid"), connectsAsHostId != null ? connectsAsHostId
                    : given.getOrDefault("hostid", "random"));
            attribute(dir.resolve("cntlid"), Integer.toString(instance + 1));
            attribute(dir.resolve("delete_controller"), "");
            attribute(dir.resolve("rescan_controller"), "");
            if (kernelAuthenticates) {
                attribute(dir.resolve("dhchap_secret"), given.getOrDefault("dhchap_secret", "none"));
                attribute(dir.resolve("dhchap_ctrl_secret"), given.getOrDefault("dhchap_ctrl_secret", "none"));
            }
            link(sysfs.sys().resolve("class/nvme/nvme" + instance), dir);
            Controller controller = new Controller(instance, nqn, portal, hostNqn, dir);
            controllers.put(instance, controller);
            int subsystem = subsystems.computeIfAbsent(nqn, n -> nextSubsystem++);
            Path subsysDir = subsystemDir(subsystem);
            attribute(subsysDir.resolve("subsysnqn"), nqn);
            link(sysfs.sys().resolve("class/nvme-subsystem/nvme-subsys" + subsystem), subsysDir);
            link(subsysDir.resolve("nvme" + instance), dir);
            if (namespacesAfter.isZero()) {
                namespacesAppear(controller, target);
            } else {
                clock.schedule(namespacesAfter, () -> namespacesAppear(controller, target));
            }
            return "instance=" + instance + ",cntlid=" + (instance + 1);
        }
    }

    /** The kernel's scan of a new controller: a path device per namespace, the head with the first path. */
    private synchronized void namespacesAppear(Controller controller, Target target) throws IOException {
        int subsystem = subsystems.get(controller.nqn());
        for (Namespace ns : target.namespaces()) {
            String key = controller.nqn() + "/" + ns.nsid();
            Integer head = heads.get(key);
            if (head == null) {
                head = nextHead++;
                heads.put(key, head);
                Path headDir = subsystemDir(subsystem).resolve("nvme" + subsystem + "n" + head);
                sysfs.addBlockDeviceAt(headDir, "nvme" + subsystem + "n" + head, new DeviceNumber(259, nextMinor++));
                identity(headDir, ns);
            }
            Path path = controller.dir().resolve("nvme" + subsystem + "c" + controller.instance() + "n" + head);
            identity(path, ns);
            attribute(path.resolve("ana_state"), "optimized");
        }
    }

    private static void identity(Path dir, Namespace ns) throws IOException {
        attribute(dir.resolve("nsid"), Long.toString(ns.nsid()));
        attribute(dir.resolve("nguid"), ns.nguid());
        attribute(dir.resolve("uuid"), ns.uuid());
        attribute(dir.resolve("wwid"), "uuid." + ns.uuid());
    }

    /** Records the write like any sysfs write, then plays the kernel's delete of a controller. */
    @Override
    public void write(Path attribute, String value) throws IOException {
        sysfs.write(attribute, value);
        Path real = attribute.toRealPath();
        if (real.getFileName().toString().equals("delete_controller") && value.strip().equals("1")) {
            delete(real.getParent());
        }
    }

    private synchronized void delete(Path dir) throws IOException {
        Controller controller = controllers.values().stream().filter(c -> c.dir().equals(dir)).findFirst()
                .orElseThrow();
        controllers.remove(controller.instance());
        int subsystem = subsystems.get(controller.nqn());
        Files.deleteIfExists(sysfs.sys().resolve("class/nvme/nvme" + controller.instance()));
        Files.deleteIfExists(subsystemDir(subsystem).resolve("nvme" + controller.instance()));
        FakeSysfs.deleteTree(controller.dir());
        if (controllers.values().stream().noneMatch(c -> c.nqn().equals(controller.nqn()))) {
            for (Map.Entry<String, Integer> head : List.copyOf(heads.entrySet())) {
                if (head.getKey().startsWith(controller.nqn() + "/")) {
                    String name = "nvme" + subsystem + "n" + head.getValue();
                    Path headDir = subsystemDir(subsystem).resolve(name);
                    String dev = read(headDir.resolve("dev"));
                    String[] mm = dev.split(":");
                    sysfs.removeBlockDeviceAt(headDir, name,
                            new DeviceNumber(Integer.parseInt(mm[0]), Integer.parseInt(mm[1])));
                    heads.remove(head.getKey());
                }
            }
            subsystems.remove(controller.nqn());
            Files.deleteIfExists(sysfs.sys().resolve("class/nvme-subsystem/nvme-subsys" + subsystem));
            FakeSysfs.deleteTree(subsystemDir(subsystem));
        }
    }

    /** A portal that stops (or starts again) answering connects, as an array port taken away. */
    synchronized void reachable(String portal, boolean answers) {
        if (answers) {
            unreachable.remove(portal);
        } else {
            unreachable.add(portal);
        }
    }

    /** The kernel's delete of the controller at {@code portal} once ctrl_loss_tmo ran out: no write to it. */
    synchronized void lostPastCtrlLossTmo(String portal) throws IOException {
        Controller controller = controllers.values().stream().filter(c -> c.portal().equals(portal)).findFirst()
                .orElseThrow();
        delete(controller.dir());
    }

    /** The controller connected to {@code portal}, if any. */
    synchronized Optional<String> controllerAt(String portal) {
        return controllers.values().stream().filter(c -> c.portal().equals(portal))
                .map(c -> "nvme" + c.instance()).findFirst();
    }

    synchronized int controllerCount() {
        return controllers.size();
    }

    /** Sets a controller attribute as the kernel would change it (state on a path loss, say). */
    void set(String controller, String attributeName, String value) throws IOException {
        attribute(sysfs.sys().resolve("class/nvme/" + controller).toRealPath().resolve(attributeName), value);
    }

    /** Sets the ANA state of every path of a controller. */
    void ana(String controller, String state) throws IOException {
        Path dir = sysfs.sys().resolve("class/nvme/" + controller).toRealPath();
        try (var entries = Files.newDirectoryStream(dir, "nvme*c*n*")) {
            for (Path path : entries) {
                attribute(path.resolve("ana_state"), state);
            }
        }
    }

    private Path subsystemDir(int subsystem) {
        return sysfs.sys().resolve("devices/virtual/nvme-subsystem/nvme-subsys" + subsystem);
    }

    /** As the tests name portals; an IPv6 address in any spelling is printed as Java prints it. */
    private static String portal(String traddr, String trsvcid) throws IOException {
        if (traddr == null || trsvcid == null) {
            throw new IOException("Invalid argument");
        }
        return traddr.indexOf(':') >= 0 ? "[" + java.net.InetAddress.getByName(traddr).getHostAddress() + "]:" + trsvcid
                : traddr + ":" + trsvcid;
    }

    private static String read(Path file) throws IOException {
        return Files.readString(file).strip();
    }
}
