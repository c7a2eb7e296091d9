package dev.blocknode.transport;


import dev.blocknode.outcome.Secrets;

import java.util.Map;
import java.util.Optional;

/** What a transport needs to attach a volume: its id, the CO's contexts, and the stage secrets. */
public record AttachRequest(String volumeId, Map<String, String> volumeContext, Map<String, String> publishContext,
                            Secrets secrets) {

    public AttachRequest {
        volumeContext = Map.copyOf(volumeContext);
        publishContext = Map.copyOf(publishContext);
    }

    /** A key from publish_context (the controller's word for this attachment) or else volume_context. */
    public Optional<String> key(String name) {
        Optional<String> published = present(publishContext.get(name));
        return published.isPresent() ? published : present(volumeContext.get(name));
    }

    /** A blank value counts as absent. */
    private static Optional<String> present(String value) {
        return Optional.ofNullable(value).map(String::strip).filter(v -> !v.isEmpty());
    }
}
