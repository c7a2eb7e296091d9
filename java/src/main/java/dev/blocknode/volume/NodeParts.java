package dev.blocknode.volume;

import dev.blocknode.os.host.Host;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.StagingRecords;

/** What every part of a stage and an unstage works on: the host, kubelet's paths, the records, the transports. */
record NodeParts(Host host, KubeletPaths paths, StagingRecords records, Transports transports) {
}
