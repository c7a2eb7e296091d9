/**
 * The JNI boundary: LinuxNative declares every native method, libblocknode.so implements them (src/main/c),
 * and errno becomes a typed exception here. It depends on nothing; only the os packages call LinuxNative (the
 * architecture test checks it).
 */
package dev.blocknode.os.natives;
