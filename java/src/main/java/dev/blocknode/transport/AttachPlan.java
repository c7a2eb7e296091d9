package dev.blocknode.transport;

/**
 * A request's keys as one transport read them when the stage was planned ({@link Transport#validate}), handed back to
 * the same transport's {@link Transport#attach(AttachPlan)}: the keys are parsed once per stage, and what attach
 * uses is what was checked. Opaque to everyone else; a transport's own plan never prints the secrets it holds.
 */
@FunctionalInterface
public interface AttachPlan {

    /** The request the plan was read from (the volume's id, its contexts, the stage secrets). */
    AttachRequest request();

    /**
     * {@code plan} as the plan type {@code transport} makes: a plan another transport made is a programming error,
     * never the request's.
     */
    static <P extends AttachPlan> P own(Class<P> type, AttachPlan plan, Transport transport) {
        if (!type.isInstance(plan)) {
            throw new IllegalArgumentException("the " + transport.name() + " transport was handed a plan it did not"
                    + " make (" + plan.getClass().getName() + ")");
        }
        return type.cast(plan);
    }
}
