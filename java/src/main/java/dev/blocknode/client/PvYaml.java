package dev.blocknode.client;

import java.util.Map;

/**
 * The YAML documents {@code blocknode pv} prints: a PersistentVolume per LUN and, when asked, the claim bound to
 * it. Every string is double-quoted (so "0x50..." or "on" stays a string, whatever YAML 1.1 would make of it),
 * with the two characters a double-quoted scalar must escape escaped; the input was refused earlier if it held a
 * control character.
 */
final class PvYaml {

    private PvYaml() {
    }

    static String persistentVolume(StaticVolume volume, String driver, String claimNamespace, boolean claim) {
        StringBuilder out = new StringBuilder("---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n");
        out.append("  name: ").append(quote(volume.name())).append('\n');
        out.append("spec:\n  capacity:\n    storage: ").append(quote(volume.size())).append('\n');
        out.append("  accessModes: [").append(quote(volume.accessMode())).append("]\n");
        out.append("  persistentVolumeReclaimPolicy: Retain\n");
        out.append("  storageClassName: \"\"\n");
        out.append("  volumeMode: ").append(volume.block() ? "Block" : "Filesystem").append('\n');
        if (claim) {
            out.append("  claimRef:\n    namespace: ").append(quote(claimNamespace)).append('\n')
                    .append("    name: ").append(quote(volume.name())).append('\n');
        }
        out.append("  csi:\n    driver: ").append(quote(driver)).append('\n');
        out.append("    volumeHandle: ").append(quote(volume.volumeHandle())).append('\n');
        volume.fsType().ifPresent(fs -> out.append("    fsType: ").append(quote(fs)).append('\n'));
        out.append("    volumeAttributes:\n");
        for (Map.Entry<String, String> attribute : volume.attributes().entrySet()) {
            out.append("      ").append(quote(attribute.getKey())).append(": ").append(quote(attribute.getValue()))
                    .append('\n');
        }
        volume.secretName().ifPresent(secret -> out.append("    nodeStageSecretRef:\n      name: ")
                .append(quote(secret)).append("\n      namespace: ").append(quote(volume.secretNamespace()))
                .append('\n'));
        return out.toString();
    }

    static String claim(StaticVolume volume, String namespace) {
        return "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n"
                + "  name: " + quote(volume.name()) + "\n  namespace: " + quote(namespace) + "\n"
                + "spec:\n  accessModes: [" + quote(volume.accessMode()) + "]\n"
                + "  storageClassName: \"\"\n"
                + "  volumeMode: " + (volume.block() ? "Block" : "Filesystem") + "\n"
                + "  volumeName: " + quote(volume.name()) + "\n"
                + "  resources:\n    requests:\n      storage: " + quote(volume.size()) + "\n";
    }

    static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
