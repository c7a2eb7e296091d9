package dev.blocknode;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The build's version, written into the jar by Maven resource filtering. */
public final class Version {

    private static final String VERSION = load();

    private Version() {
    }

    public static String current() {
        return VERSION;
    }

    private static String load() {
        try (InputStream in = Version.class.getResourceAsStream("/blocknode-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }
}
