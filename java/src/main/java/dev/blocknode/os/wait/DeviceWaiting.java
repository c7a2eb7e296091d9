package dev.blocknode.os.wait;

import dev.blocknode.os.uevent.KernelEvents;
import dev.blocknode.os.uevent.UeventSource;

import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.logging.Logger;

/**
 * How the plugin waits for devices: woken by the kernel's uevents (default), with a slow poll behind them in
 * case an event is lost or never sent; or by polling alone ({@code --device-wait=poll}), which is also what
 * happens when the uevent socket cannot be opened (a sandbox without netlink). Owns the event listener.
 */
public final class DeviceWaiting implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(DeviceWaiting.class.getName());

    /** The look-again interval behind the events: they do the work, this only catches what they missed. */
    public static final Duration EVENTS_SAFETY_INTERVAL = Duration.ofSeconds(1);

    private final DeviceWaiter waiter;
    private final Optional<KernelEvents> events;

    private DeviceWaiting(DeviceWaiter waiter, Optional<KernelEvents> events) {
        this.waiter = waiter;
        this.events = events;
    }

    /**
     * @param interval the polling interval; with events, the safety poll (default {@link #EVENTS_SAFETY_INTERVAL});
     *                 without, the poll itself (default {@link DeviceWaiter#DEFAULT_INTERVAL})
     */
    public static DeviceWaiting start(DeviceWaitMode mode, Optional<Duration> interval, UeventSource.Opener opener) {
        Duration polling = interval.orElse(DeviceWaiter.DEFAULT_INTERVAL);
        if (mode == DeviceWaitMode.POLL) {
            LOG.info(() -> "device waits poll every " + polling.toMillis() + " ms (--device-wait=poll)");
            return polling(polling);
        }
        UeventSource source;
        try {
            source = opener.open();
        } catch (IOException | RuntimeException e) {
            LOG.warning(() -> "kernel uevents are not available (" + e.getMessage() + "); device waits poll every "
                    + polling.toMillis() + " ms instead");
            return polling(polling);
        }
        KernelEvents events = KernelEvents.startForStorage(source);
        Duration safety = interval.orElse(EVENTS_SAFETY_INTERVAL);
        LOG.info(() -> "device waits end on kernel uevents, looking again at least every " + safety.toMillis() + " ms");
        DeviceWaiter.Pause pause = new DeviceWaiter.Pause() {
            @Override
            public void pause(Duration atMost) throws InterruptedException {
                events.pause(atMost);
            }

            @Override
            public OptionalLong lastEventNanos() {
                return events.lastEventNanos();
            }
        };
        return new DeviceWaiting(new DeviceWaiter(InstantSource.system(), pause, safety), Optional.of(events));
    }

    private static DeviceWaiting polling(Duration interval) {
        return new DeviceWaiting(DeviceWaiter.polling(interval), Optional.empty());
    }

    public DeviceWaiter waiter() {
        return waiter;
    }

    /** Whether pauses currently end on events (false when polling, by choice or because events failed). */
    public boolean eventDriven() {
        return events.map(KernelEvents::listening).orElse(false);
    }

    @Override
    public void close() {
        events.ifPresent(KernelEvents::close);
    }
}
