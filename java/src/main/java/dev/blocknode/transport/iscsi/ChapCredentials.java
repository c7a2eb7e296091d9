package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Session CHAP from NodeStageVolume secrets, under open-iscsi's own setting names (what operators
 * already know from iscsid.conf): node.session.auth.username / password, and for mutual CHAP
 * username_in / password_in. Values never appear in toString, logs or any process's argv: they are
 * written into the node record file only.
 */
public final class ChapCredentials {

    public static final String AUTH_METHOD = "node.session.auth.authmethod";
    public static final String USERNAME = "node.session.auth.username";
    public static final String PASSWORD = "node.session.auth.password";
    public static final String USERNAME_IN = "node.session.auth.username_in";
    public static final String PASSWORD_IN = "node.session.auth.password_in";

    private final Map<String, String> settings;

    private ChapCredentials(Map<String, String> settings) {
        this.settings = settings;
    }

    public static Optional<ChapCredentials> from(Secrets secrets) throws VolumeException {
        Optional<String> user = secrets.get(USERNAME);
        Optional<String> password = secrets.get(PASSWORD);
        if (user.isEmpty() && password.isEmpty()) {
            if (secrets.get(USERNAME_IN).isPresent() || secrets.get(PASSWORD_IN).isPresent()) {
                throw VolumeException.invalid("secrets give mutual CHAP (" + USERNAME_IN + ") without CHAP ("
                        + USERNAME + ", " + PASSWORD + ")");
            }
            return Optional.empty();
        }
        if (user.isEmpty() || password.isEmpty()) {
            throw VolumeException.invalid("secrets must give both " + USERNAME + " and " + PASSWORD);
        }
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put(AUTH_METHOD, "CHAP");
        settings.put(USERNAME, checked(USERNAME, user.get()));
        settings.put(PASSWORD, checked(PASSWORD, password.get()));
        Optional<String> userIn = secrets.get(USERNAME_IN);
        Optional<String> passwordIn = secrets.get(PASSWORD_IN);
        if (userIn.isPresent() != passwordIn.isPresent()) {
            throw VolumeException.invalid("secrets must give both " + USERNAME_IN + " and " + PASSWORD_IN
                    + ", or neither");
        }
        if (userIn.isPresent()) {
            settings.put(USERNAME_IN, checked(USERNAME_IN, userIn.get()));
            settings.put(PASSWORD_IN, checked(PASSWORD_IN, passwordIn.get()));
        }
        return Optional.of(new ChapCredentials(Map.copyOf(settings)));
    }

    /** A record file is line-based: a newline or NUL in a value would forge another setting. */
    private static String checked(String key, String value) throws VolumeException {
        if (value.isEmpty() || value.chars().anyMatch(c -> c == '\n' || c == '\r' || c == 0)) {
            throw VolumeException.invalid("secret " + key + " is empty or holds a line break or NUL");
        }
        return value;
    }

    /** The node-record settings to write, secret values included: for the record file only. */
    Map<String, String> recordSettings() {
        return settings;
    }

    @Override
    public String toString() {
        return "ChapCredentials" + settings.keySet() + " (values redacted)";
    }
}
