/**
 * Host, which composes the other os packages into the one object the layers above are handed, so that a test
 * can replace any part of the machine. It sits above the packages it composes (block, mount, exec, fd). Also
 * SyscallLibrary: the JNI library's loading, for the entry points, which do not reach os.natives themselves.
 */
package dev.blocknode.os.host;
