/**
 * The one way to run an external program: argument arrays only, a time limit, a clean environment and
 * secrets on standard input, never in argv. It uses no other package, so tests can swap in a scripted runner
 * that states which commands must run.
 */
package dev.blocknode.os.exec;
