package dev.blocknode.client;

import dev.blocknode.csi.StageRequestCheck;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.volume.StageRequestRules;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * One LUN of {@code blocknode pv}'s input, checked: the PV's own columns (name, size, fsType or block, access
 * mode, the Secret's name), and its volume attributes put through NodeStageVolume's own checks as kubelet would
 * send them for this PV, so that a refusal is the plugin's message.
 */
record StaticVolume(String name, String volumeHandle, String size, Optional<String> fsType, boolean block,
                    String accessMode, Map<String, String> attributes, Optional<String> secretName,
                    String secretNamespace) {

    static final String NAME = "name";
    static final String VOLUME_HANDLE = "volumeHandle";
    static final String SIZE = "size";
    static final String FS_TYPE = "fsType";
    static final String ACCESS_MODE = "accessMode";
    static final String SECRET_NAME = "secretName";
    static final String SECRET_NAMESPACE = "secretNamespace";
    /** The fsType column's word for a raw block volume (volumeMode Block, no filesystem). */
    static final String BLOCK = "block";
    static final List<String> PV_COLUMNS = List.of(NAME, VOLUME_HANDLE, SIZE, FS_TYPE, ACCESS_MODE, SECRET_NAME,
            SECRET_NAMESPACE);

    /**
     * Kubernetes access modes and the CSI mode kubelet sends for each to a driver that advertises
     * SINGLE_NODE_MULTI_WRITER, as blocknode does: the mode the capability check sees.
     */
    static final Map<String, VolumeCapability.AccessMode.Mode> ACCESS_MODES = Map.of(
            "ReadWriteOncePod", VolumeCapability.AccessMode.Mode.SINGLE_NODE_SINGLE_WRITER,
            "ReadWriteOnce", VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER,
            "ReadOnlyMany", VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY,
            "ReadWriteMany", VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER);
    /** What docs/volumes.md advises for a volume one pod writes. */
    static final String DEFAULT_ACCESS_MODE = "ReadWriteOncePod";

    /** A DNS subdomain (RFC 1123): what Kubernetes takes as a PV, PVC or Secret name. */
    private static final Pattern SUBDOMAIN = Pattern.compile(
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    /** A DNS label (RFC 1123): a namespace. */
    private static final Pattern LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    /** A Kubernetes quantity with a binary or decimal suffix, or bytes: "100Gi", "1.5T", "1073741824". */
    private static final Pattern QUANTITY = Pattern.compile("[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?");
    /** Where kubelet would stage it: only its form is checked (RequestFields.path), never the place. */
    private static final String STAGING_PATH = "/var/lib/kubelet/plugins/kubernetes.io/csi/pv/staging/globalmount";

    /**
     * @throws RefusedRow naming every problem of the row: each PV column that is wrong, and for the attributes the
     *                    plugin's own NodeStageVolume messages
     */
    static StaticVolume of(LunRow row, StageRequestRules rules, String defaultNamespace) {
        Map<String, String> columns = row.columns();
        List<String> problems = pvColumnProblems(columns, defaultNamespace);
        String name = columns.get(NAME);
        String accessMode = columns.getOrDefault(ACCESS_MODE, DEFAULT_ACCESS_MODE);
        Optional<String> fsType = Optional.ofNullable(columns.get(FS_TYPE));
        boolean block = fsType.filter(BLOCK::equals).isPresent();
        if (block) {
            fsType = Optional.empty();
        }
        Optional<String> secretName = Optional.ofNullable(columns.get(SECRET_NAME));
        String secretNamespace = columns.getOrDefault(SECRET_NAMESPACE, defaultNamespace);
        Map<String, String> attributes = new LinkedHashMap<>();
        columns.forEach((column, value) -> {
            if (!PV_COLUMNS.contains(column)) {
                attributes.put(column, value);
            }
        });
        // A misspelling is named as such, before (and besides) what it left out.
        problems.addAll(ContextKeys.unknown(attributes.keySet()));
        // Without a name (refused above) the plugin's checks still run, on a stand-in handle, for the row's other
        // problems.
        String volumeHandle = columns.getOrDefault(VOLUME_HANDLE, name == null ? "unnamed" : name);
        StageRequestRules.Findings findings = checkedByThePlugin(volumeHandle, capability(fsType, block,
                ACCESS_MODES.getOrDefault(accessMode, ACCESS_MODES.get(DEFAULT_ACCESS_MODE))), attributes,
                secretName.isPresent(), rules);
        problems.addAll(findings.problems());
        findings.transport().ifPresent(t -> problems.addAll(ContextKeys.unknown(t, attributes.keySet())));
        if (!problems.isEmpty()) {
            throw new RefusedRow(problems.stream().distinct().toList());
        }
        // Written out even when inferred: a PV that says its transport still means the same after a key is added.
        Map<String, String> withTransport = new LinkedHashMap<>();
        withTransport.put(ContextKeys.TRANSPORT, findings.transport().orElseThrow());
        attributes.forEach(withTransport::putIfAbsent);
        if (!attributes.containsKey(ContextKeys.TRANSPORT)) {
            // The key written out counts against the context's 4 KiB too: the attributes as printed are what a stage
            // gets, so they are checked again as such (a row just under the limit would otherwise be printed over it).
            List<String> written = checkedByThePlugin(volumeHandle, capability(fsType, block,
                    ACCESS_MODES.get(accessMode)), withTransport, secretName.isPresent(), rules).problems();
            if (!written.isEmpty()) {
                throw new RefusedRow(written.stream().map(p -> p + " (with the \"" + ContextKeys.TRANSPORT
                        + "\" key pv writes into the PV)").toList());
            }
        }
        return new StaticVolume(name, volumeHandle, columns.get(SIZE), fsType, block, accessMode, withTransport,
                secretName, secretNamespace);
    }

    /** What is wrong with the PV's own columns: its name and size, access mode and Secret. */
    private static List<String> pvColumnProblems(Map<String, String> columns, String defaultNamespace) {
        List<String> problems = new ArrayList<>();
        String name = required(columns, NAME, problems);
        if (name != null && (name.length() > 253 || !SUBDOMAIN.matcher(name).matches())) {
            problems.add("name \"" + name + "\" is not a Kubernetes object name (lower-case letters, digits, '-'"
                    + " and '.', at most 253)");
        }
        String size = required(columns, SIZE, problems);
        if (size != null && (!QUANTITY.matcher(size).matches() || size.matches("[0.]+(\\D.*)?"))) {
            problems.add("size \"" + size + "\" is not a positive Kubernetes quantity (100Gi, 500G, 1073741824)");
        }
        String accessMode = columns.getOrDefault(ACCESS_MODE, DEFAULT_ACCESS_MODE);
        if (!ACCESS_MODES.containsKey(accessMode)) {
            problems.add("accessMode \"" + accessMode + "\" is not one of " + new TreeMap<>(ACCESS_MODES).keySet());
        }
        String secretName = columns.get(SECRET_NAME);
        if (secretName != null && (secretName.length() > 253 || !SUBDOMAIN.matcher(secretName).matches())) {
            problems.add("secretName \"" + secretName + "\" is not a Secret name");
        }
        String secretNamespace = columns.getOrDefault(SECRET_NAMESPACE, defaultNamespace);
        if (secretName == null && columns.containsKey(SECRET_NAMESPACE)) {
            problems.add("secretNamespace is given without secretName");
        } else if (secretNamespace.length() > 63 || !LABEL.matcher(secretNamespace).matches()) {
            problems.add("secretNamespace \"" + secretNamespace + "\" is not a namespace name");
        }
        return problems;
    }

    /** A row refused, with every problem found in it. */
    static final class RefusedRow extends IllegalArgumentException {

        private final List<String> problems;

        RefusedRow(List<String> problems) {
            super(String.join("; ", problems));
            this.problems = List.copyOf(problems);
        }

        List<String> problems() {
            return problems;
        }
    }

    /** NodeStageVolume's checks on the request kubelet would send for this PV (no secrets: only their names). */
    private static StageRequestRules.Findings checkedByThePlugin(String volumeHandle, VolumeCapability capability,
                                                                 Map<String, String> attributes, boolean secretNamed,
                                                                 StageRequestRules rules) {
        NodeStageVolumeRequest request = NodeStageVolumeRequest.newBuilder().setVolumeId(volumeHandle)
                .setStagingTargetPath(STAGING_PATH).setVolumeCapability(capability).putAllVolumeContext(attributes)
                .build();
        return StageRequestCheck.problems(request, rules, secretNamed);
    }

    /** The capability kubelet sends for the PV: its access mode, and raw block or a mount of its fsType. */
    private static VolumeCapability capability(Optional<String> fsType, boolean block,
                                               VolumeCapability.AccessMode.Mode mode) {
        VolumeCapability.Builder capability = VolumeCapability.newBuilder()
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode));
        if (block) {
            capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
        } else {
            capability.setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType.orElse("")));
        }
        return capability.build();
    }

    private static String required(Map<String, String> columns, String column, List<String> problems) {
        String value = columns.get(column);
        if (value == null) {
            problems.add("column \"" + column + "\" is required");
        }
        return value;
    }
}
