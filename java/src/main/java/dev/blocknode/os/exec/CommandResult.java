package dev.blocknode.os.exec;

/** What a finished command left: its exit code and what it printed. */
public record CommandResult(int exitCode, String stdout, String stderr) {

    public boolean succeeded() {
        return exitCode == 0;
    }

    /** stderr if it said anything, else stdout: the text worth quoting in an error message. */
    public String diagnostic() {
        String text = stderr.isBlank() ? stdout : stderr;
        text = text.strip();
        return text.length() > 2000 ? text.substring(0, 2000) + "..." : text;
    }
}
