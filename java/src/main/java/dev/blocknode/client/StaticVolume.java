package dev.blocknode.client;

import dev.blocknode.csi.StageRequestCheck;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.StageRequestRules;

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
     * @throws IllegalArgumentException naming the column and what is wrong; for the attributes, the plugin's own
     *                                  NodeStageVolume message
     */
    static StaticVolume of(LunRow row, StageRequestRules rules, String defaultNamespace) {
        Map<String, String> columns = row.columns();
        String name = required(columns, NAME);
        if (name.length() > 253 || !SUBDOMAIN.matcher(name).matches()) {
            throw new IllegalArgumentException("name \"" + name + "\" is not a Kubernetes object name (lower-case"
                    + " letters, digits, '-' and '.', at most 253)");
        }
        String size = required(columns, SIZE);
        if (!QUANTITY.matcher(size).matches() || size.matches("[0.]+(\\D.*)?")) {
            throw new IllegalArgumentException("size \"" + size + "\" is not a positive Kubernetes quantity (100Gi,"
                    + " 500G, 1073741824)");
        }
        String accessMode = columns.getOrDefault(ACCESS_MODE, DEFAULT_ACCESS_MODE);
        if (!ACCESS_MODES.containsKey(accessMode)) {
            throw new IllegalArgumentException("accessMode \"" + accessMode + "\" is not one of "
                    + new TreeMap<>(ACCESS_MODES).keySet());
        }
        Optional<String> fsType = Optional.ofNullable(columns.get(FS_TYPE));
        boolean block = fsType.filter(BLOCK::equals).isPresent();
        if (block) {
            fsType = Optional.empty();
        }
        Optional<String> secretName = Optional.ofNullable(columns.get(SECRET_NAME));
        if (secretName.isPresent() && (secretName.get().length() > 253
                || !SUBDOMAIN.matcher(secretName.get()).matches())) {
            throw new IllegalArgumentException("secretName \"" + secretName.get() + "\" is not a Secret name");
        }
        String secretNamespace = columns.getOrDefault(SECRET_NAMESPACE, defaultNamespace);
        if (!columns.containsKey(SECRET_NAME) && columns.containsKey(SECRET_NAMESPACE)) {
            throw new IllegalArgumentException("secretNamespace is given without secretName");
        }
        if (secretNamespace.length() > 63 || !LABEL.matcher(secretNamespace).matches()) {
            throw new IllegalArgumentException("secretNamespace \"" + secretNamespace + "\" is not a namespace name");
        }
        Map<String, String> attributes = new LinkedHashMap<>();
        columns.forEach((column, value) -> {
            if (!PV_COLUMNS.contains(column)) {
                attributes.put(column, value);
            }
        });
        ContextKeys.requireKnown(attributes.keySet()); // a misspelling named as such, before what it left out
        String volumeHandle = columns.getOrDefault(VOLUME_HANDLE, name);
        String transport = checkedByThePlugin(volumeHandle, fsType, block, accessMode, attributes, rules);
        ContextKeys.requireKnown(transport, attributes.keySet());
        // Written out even when inferred: a PV that says its transport still means the same after a key is added.
        Map<String, String> withTransport = new LinkedHashMap<>();
        withTransport.put(ContextKeys.TRANSPORT, transport);
        attributes.forEach(withTransport::putIfAbsent);
        return new StaticVolume(name, volumeHandle, size, fsType, block, accessMode, withTransport, secretName,
                secretNamespace);
    }

    /** NodeStageVolume's checks on the request kubelet would send for this PV (no secrets: only their names). */
    private static String checkedByThePlugin(String volumeHandle, Optional<String> fsType, boolean block,
                                             String accessMode, Map<String, String> attributes,
                                             StageRequestRules rules) {
        VolumeCapability.Builder capability = VolumeCapability.newBuilder()
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(ACCESS_MODES.get(accessMode)));
        if (block) {
            capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
        } else {
            capability.setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType.orElse("")));
        }
        NodeStageVolumeRequest request = NodeStageVolumeRequest.newBuilder().setVolumeId(volumeHandle)
                .setStagingTargetPath(STAGING_PATH).setVolumeCapability(capability).putAllVolumeContext(attributes)
                .build();
        try {
            return StageRequestCheck.check(request, rules);
        } catch (VolumeException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    private static String required(Map<String, String> columns, String column) {
        String value = columns.get(column);
        if (value == null) {
            throw new IllegalArgumentException("column \"" + column + "\" is required");
        }
        return value;
    }
}
