/**
 * The gRPC server on its Unix socket and its interceptors (call threads, logging, metrics). The socket lives
 * under the kubelet root, so its file is handled by descriptor through os.fd; apart from os and the utilities it
 * uses nothing, and only csi and the entry points use it.
 */
package dev.blocknode.csi.server;
