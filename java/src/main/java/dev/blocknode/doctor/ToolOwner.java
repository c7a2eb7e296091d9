package dev.blocknode.doctor;

import java.util.Map;

/**
 * Whose tools the doctor runs, as its findings name them: the blocknode image's (the DaemonSet's container, or the
 * image run by hand on a node or a laptop), or this machine's own (the jar run on a node). The image says so itself
 * ({@value #IMAGE_VARIABLE} in its environment, set by deploy/Containerfile); a container is not told from a host
 * otherwise, and the wording is all that depends on it.
 */
public enum ToolOwner {
    IMAGE("the image's"),
    MACHINE("this machine's");

    /** Set to {@code true} by blocknode's image. */
    public static final String IMAGE_VARIABLE = "BLOCKNODE_IMAGE";

    private final String possessive;

    ToolOwner(String possessive) {
        this.possessive = possessive;
    }

    /** @param environment the process's ({@code System.getenv()}) */
    public static ToolOwner of(Map<String, String> environment) {
        return "true".equals(environment.get(IMAGE_VARIABLE)) ? IMAGE : MACHINE;
    }

    /** "the image's", "this machine's": before a tool's name. */
    public String possessive() {
        return possessive;
    }
}
