package dev.blocknode.transport;

import java.util.ArrayList;
import java.util.List;

/**
 * A volume_context value that lists several items (portals, mostly): "a,b", "[a, b]" or "[\"a\",\"b\"]", as
 * COs and provisioners write them. A bracket may also be an IPv6 portal's own: the outer pair is a list only
 * when it encloses everything, so "[fd00::1]:4420,[fd00::2]" is two portals, not a broken list of one.
 */
public final class ContextList {

    private ContextList() {
    }

    public static List<String> items(String text) {
        String body = text.strip();
        if (body.startsWith("[") && body.endsWith("]") && (body.startsWith("[[") || body.startsWith("[\"")
                || body.indexOf(']') == body.length() - 1)) {
            body = body.substring(1, body.length() - 1);
        }
        List<String> items = new ArrayList<>();
        for (String item : body.split(",")) {
            String value = item.strip();
            if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
                value = value.substring(1, value.length() - 1).strip();
            }
            if (!value.isEmpty()) {
                items.add(value);
            }
        }
        return items;
    }
}
