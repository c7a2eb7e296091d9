/**
 * The node's repair loop: every repair interval, each staged volume that no call holds has its transport bring
 * back the paths that returned after the kernel removed them; never beside a call on the same volume, never
 * removing anything that carries a volume. Above volume (whose guard and records it takes volumes by) and
 * transport; used by the entry points.
 */
package dev.blocknode.repair;
