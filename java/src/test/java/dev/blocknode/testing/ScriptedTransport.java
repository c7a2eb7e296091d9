package dev.blocknode.testing;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A transport whose devices are given by the test: volume_context {@value #DEVICE_KEY} names one of the
 * attachments it was given, attach answers it, and every call is logged ("attach vol-1", "detach vol-1",
 * "abandon vol-1", "refresh vol-1") for the test to read back. A failure can be queued for the next attach,
 * a hook runs inside attach (to look at what the plugin recorded before it), and a device's paths can be
 * given a health report.
 */
public final class ScriptedTransport implements Transport {

    public static final String NAME = "scripted";
    public static final String DEVICE_KEY = "scriptedDevice";

    private final Map<String, Attachment> devices = new HashMap<>();
    private final Deque<VolumeException> attachFailures = new ArrayDeque<>();
    private final List<String> calls = new ArrayList<>();
    private final Map<String, PathReport> pathReports = new HashMap<>();
    private Runnable duringAttach = () -> { };
    private Fencing fencing;

    /** Attach of a volume whose context names {@code key} answers {@code attachment}. */
    public synchronized ScriptedTransport device(String key, Attachment attachment) {
        devices.put(key, attachment);
        return this;
    }

    /** pathHealth of the device named {@code key} answers {@code report} from now on (none: no paths). */
    public synchronized void paths(String key, PathReport report) {
        pathReports.put(key, report);
    }

    public synchronized void failNextAttach(VolumeException failure) {
        attachFailures.add(failure);
    }

    /** Its LUNs are fenced by {@code fencing} (the real protocol over a fake target, say) from now on. */
    public synchronized void fencing(Fencing fencing) {
        this.fencing = fencing;
    }

    @Override
    public synchronized Optional<Fencing> fencing() {
        return Optional.ofNullable(fencing);
    }

    public synchronized void duringAttach(Runnable hook) {
        duringAttach = hook;
    }

    public synchronized List<String> calls() {
        return List.copyOf(calls);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> identifyingKeys() {
        return Set.of(DEVICE_KEY);
    }

    @Override
    public AttachPlan validate(AttachRequest request) throws VolumeException {
        if (request.key(DEVICE_KEY).isEmpty()) {
            throw VolumeException.invalid("volume_context." + DEVICE_KEY + " is required");
        }
        return () -> request;
    }

    @Override
    public synchronized Attachment attach(AttachPlan plan) throws VolumeException {
        AttachRequest request = plan.request();
        calls.add("attach " + request.volumeId());
        duringAttach.run();
        VolumeException failure = attachFailures.poll();
        if (failure != null) {
            throw failure;
        }
        String key = request.key(DEVICE_KEY).orElseThrow();
        Attachment attachment = devices.get(key);
        if (attachment == null) {
            throw VolumeException.notFound("no device " + key + " reaches this node");
        }
        return attachment;
    }

    /** Recognises its own devices by number, as a SAN transport traces a mount back to its sessions. */
    @Override
    public synchronized Optional<Attachment> attachmentOf(DeviceNumber device) {
        calls.add("recognise " + device);
        return devices.values().stream().filter(a -> a.number().equals(device)).findFirst();
    }

    @Override
    public synchronized void detach(Attachment attachment) {
        calls.add("detach " + attachment.device().getFileName());
    }

    @Override
    public synchronized void abandon(AttachRequest request) {
        calls.add("abandon " + request.volumeId());
    }

    @Override
    public synchronized void refreshSize(Attachment attachment) {
        calls.add("refresh " + attachment.device().getFileName());
    }

    @Override
    public synchronized Optional<PathReport> pathHealth(Attachment attachment) {
        return Optional.ofNullable(pathReports.get(attachment.device().getFileName().toString()));
    }
}
