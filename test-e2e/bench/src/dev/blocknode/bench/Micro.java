package dev.blocknode.bench;

import com.google.protobuf.TextFormat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPaths;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;

/**
 * The pieces of the plugin's per-call work, each timed alone in a JVM started with the image's flags
 * (C1 only, serial GC): reading and parsing a staging record, writing one durably, and the syscalls of
 * NodeGetVolumeStats. Prints "name TAB nanoseconds per call" lines.
 *
 *   Micro RECORD_STATE_DIR DISK_DIR TMPFS_DIR MOUNT_POINT   (RECORD_STATE_DIR/volumes holds one record)
 */
public final class Micro {

    interface Op {
        void run() throws Exception;
    }

    private static final int BATCHES = 15;

    public static void main(String[] args) throws Exception {
        NativeLibrary.load();
        Path recordStateDir = Path.of(args[0]);
        Path diskDir = Path.of(args[1]);
        Path tmpfsDir = Path.of(args[2]);
        String mountPoint = args[3];
        StagingRecord record = new RecordStore(recordStateDir).all().get(0);
        String text = TextFormat.printer().printToString(record);
        TextFormat.Parser parser = TextFormat.Parser.newBuilder().setAllowUnknownFields(true).build();
        byte[] binary = record.toByteArray();

        RecordStore disk = new RecordStore(diskDir);
        RecordStore memory = new RecordStore(tmpfsDir);
        disk.save(record);
        memory.save(record);
        Path file;
        try (var files = Files.newDirectoryStream(disk.directory(), "*.pb")) {
            file = files.iterator().next();
        }
        Path kubelet = diskDir.resolve("kubelet");
        Path deep = kubelet.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/vol/globalmount");
        Files.createDirectories(deep);
        KubeletPaths paths = new KubeletPaths(kubelet);
        Path small = diskDir.resolve("fsync-probe");
        String volumeId = record.getVolumeId();

        System.out.println("staging record: " + Files.size(file) + " bytes on disk (binary protobuf + 8-byte header),"
                + " " + text.length() + " bytes as text format; " + record.getPublicationsCount() + " publication(s),"
                + " journaled apart");
        time("RecordStore.load (from the store's memory)", () -> disk.load(volumeId));
        time("  opening a store of this one record (read + checksum + binary parse)",
                () -> new RecordStore(recordStateDir));
        time("  binary protobuf parse alone", () -> StagingRecord.parseFrom(binary));
        time("  (text-format parse of the same record, the old format, for comparison)",
                () -> parser.merge(text, StagingRecord.newBuilder()));
        // Two versions of the staging part, so that every save is a real (durable) one.
        StagingRecord other = record.toBuilder().putAttachment("bench", "x").build();
        StagingRecord[] versions = {record, other};
        int[] turn = new int[1];
        time("RecordStore.save of a changed staging record (encode, write, fsync, rename, fsync dir), root disk",
                () -> disk.save(versions[turn[0]++ & 1]));
        time("RecordStore.save of a changed staging record, tmpfs", () -> memory.save(versions[turn[0]++ & 1]));
        Map<String, PublicationRecord> published = Map.of("/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount",
                PublicationRecord.newBuilder().setAccessMode("SINGLE_NODE_WRITER").build());
        time("RecordStore.savePublications, publish or unpublish (one journal write, no fsync), root disk",
                () -> disk.savePublications(volumeId, (turn[0]++ & 1) == 0 ? published : Map.of()));
        time("  binary encode alone", () -> record.toByteArray());
        time("  fsync of a 300-byte file alone, root disk", () -> {
            try (FileChannel ch = FileChannel.open(small, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(java.nio.ByteBuffer.wrap(binary));
                ch.force(true);
            }
        });
        time("KubeletPaths.confine of a staging path (string checks only; opening beneath the root comes after)", () -> paths.confine("volume_path",
                deep.toString()));
        time("isMountPoint (statx)", () -> LinuxNative.isMountPoint(mountPoint));
        time("stat (statx)", () -> LinuxNative.stat(mountPoint));
        time("statvfs", () -> LinuxNative.statvfs(mountPoint));
        time("sysfs device check (lstat of the /sys/dev/block/7:0 entry, as NodeGetVolumeStats does)",
                () -> Files.exists(Path.of("/sys/dev/block/7:0"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
    }

    /** Warm up for ~0.5 s, then BATCHES batches of ~20 ms each; prints the median per-call time. */
    private static void time(String name, Op op) throws Exception {
        long warmEnd = System.nanoTime() + 500_000_000L;
        long n = 0;
        long t0 = System.nanoTime();
        while (System.nanoTime() < warmEnd) {
            op.run();
            n++;
        }
        double perCall = (double) (System.nanoTime() - t0) / n;
        int batch = (int) Math.max(1, Math.min(1_000_000, 20_000_000 / perCall));
        double[] results = new double[BATCHES];
        for (int b = 0; b < BATCHES; b++) {
            long s = System.nanoTime();
            for (int i = 0; i < batch; i++) {
                op.run();
            }
            results[b] = (double) (System.nanoTime() - s) / batch;
        }
        Arrays.sort(results);
        System.out.println(name + "\t" + results[BATCHES / 2]);
    }
}
