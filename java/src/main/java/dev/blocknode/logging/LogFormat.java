package dev.blocknode.logging;

/** {@code --log-format}: one JSON object per line, or plain text. */
public enum LogFormat { JSON, TEXT }
