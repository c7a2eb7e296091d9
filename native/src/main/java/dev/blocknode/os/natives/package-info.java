/**
 * The JNI boundary: LinuxNative declares every native method, libblocknode.so implements them (src/main/c),
 * and a failed call arrives as one NativeIOException carrying its raw errno, which os types (Errno). It depends
 * on nothing; only the os packages call LinuxNative (the architecture test checks it).
 */
package dev.blocknode.os.natives;
