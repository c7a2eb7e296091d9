/**
 * One log line per record, JSON or text, and the one place where caller text is made printable before it
 * reaches a log. A utility: any layer may log through it, and it uses no layer, so nothing it does can recurse into
 * the code that logs.
 */
package dev.blocknode.logging;
