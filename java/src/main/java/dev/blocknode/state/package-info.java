/**
 * Durable per-volume staging records and the publication journal, written before the host is changed so
 * that a restarted plugin can finish or undo what a crash cut short. Used by volume and the entry points; it may
 * use only os (and the generated record schema, state.v1).
 */
package dev.blocknode.state;
