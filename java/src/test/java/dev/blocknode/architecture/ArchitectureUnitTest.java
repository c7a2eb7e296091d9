package dev.blocknode.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.Architectures.LayeredArchitecture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The package order of the plugin, as docs/design/architecture.md draws it, checked on the compiled classes. Each
 * layer uses only layers below it:
 *
 * <pre>
 *   entry points   dev.blocknode (Main, Plugin), demo, client: wire everything
 *   doctor         -> transport (its identity readers), os: the node's readiness, read-only
 *   csi            -> volume, csi.server
 *   csi.server     -> os (the gRPC server's socket file, by descriptor: os.fd.SocketDirectory)
 *   repair         -> volume (staged volumes under their guard), transport: the path repair loop
 *   volume         -> state, transport, os (a failed syscall as os's SyscallException, re-typed at the os seam)
 *                     inside volume, its lifecycle (the package itself) -> its read side (volume.read) ->
 *                     what both share (volume.record, .kubelet, .request, .filesystem, .encryption)
 *   state          -> os
 *   transport      -> multipath, scsi, nvme, os (transport.san: the SCSI stack that FC and iSCSI compose)
 *   multipath      -> scsi, os
 *   scsi           -> os
 *   nvme           -> os (NVMe reservations, through os.block's passthrough)
 *   os             -> os.natives (reached from os alone, LinuxNative and its exceptions; os.wait: device waits,
 *                     woken by os.uevent)
 * </pre>
 *
 * config (the flags' values) is for the entry points alone, and uses os only for the setting types of os's own
 * mechanisms (os.wait's DeviceWaitMode), so that os never reads a flag.
 * outcome, logging, metrics and faults are utilities any layer may use and that use no layer. No
 * package is in a cycle, and every production class must sit in a layer, so a new package has to be placed
 * here. No exceptions are listed: a back edge is removed, or routed through the layer below.
 */
class ArchitectureUnitTest {

    private static JavaClasses classes;

    @BeforeAll
    static void importProductionClasses() {
        // The plugin and the modules it is built from (proto's generated types, the JNI class), never tests.
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.blocknode");
    }

    /** The layers; each test adds the constraints of one concern. */
    private static LayeredArchitecture layers() {
        return layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("Entry points").definedBy("dev.blocknode", "dev.blocknode.demo..", "dev.blocknode.client..")
                .layer("Doctor").definedBy("dev.blocknode.doctor..")
                .layer("Csi").definedBy(resideInAPackage("dev.blocknode.csi..")
                        .and(not(resideInAPackage("dev.blocknode.csi.server.."))))
                .layer("Server").definedBy("dev.blocknode.csi.server..")
                .layer("Repair").definedBy("dev.blocknode.repair..")
                .layer("Volume").definedBy("dev.blocknode.volume..")
                .layer("State").definedBy("dev.blocknode.state..")
                .layer("Transport").definedBy("dev.blocknode.transport..")
                .layer("Multipath").definedBy("dev.blocknode.multipath..")
                .layer("Scsi").definedBy("dev.blocknode.scsi..")
                .layer("Nvme").definedBy("dev.blocknode.nvme..")
                .layer("Os").definedBy(resideInAPackage("dev.blocknode.os..")
                        .and(not(resideInAPackage("dev.blocknode.os.natives.."))))
                .layer("Natives").definedBy("dev.blocknode.os.natives..")
                .layer("Outcome").definedBy("dev.blocknode.outcome..")
                .layer("Logging").definedBy("dev.blocknode.logging..")
                .layer("Metrics").definedBy("dev.blocknode.metrics..")
                .layer("Faults").definedBy("dev.blocknode.faults..")
                .layer("Config").definedBy("dev.blocknode.config..");
    }

    @Test
    void theTopLevelPackagesFormNoCycle() {
        slices().matching("dev.blocknode.(*)..").should().beFreeOfCycles().check(classes);
    }

    @Test
    void noPackageIsInACycle() {
        // Finer than the top level: os, os.block and os.mount once needed one another.
        slices().matching("dev.blocknode.(**)").should().beFreeOfCycles().check(classes);
    }

    @Test
    void eachLayerIsUsedOnlyFromAbove() {
        layers().ensureAllClassesAreContainedInArchitecture()
                .whereLayer("Entry points").mayNotBeAccessedByAnyLayer()
                .whereLayer("Doctor").mayOnlyBeAccessedByLayers("Entry points")
                .whereLayer("Csi").mayOnlyBeAccessedByLayers("Entry points")
                .whereLayer("Server").mayOnlyBeAccessedByLayers("Csi", "Entry points")
                .whereLayer("Repair").mayOnlyBeAccessedByLayers("Entry points")
                .whereLayer("Volume").mayOnlyBeAccessedByLayers("Csi", "Repair", "Entry points")
                .whereLayer("State").mayOnlyBeAccessedByLayers("Volume", "Entry points")
                .whereLayer("Transport").mayOnlyBeAccessedByLayers("Volume", "Repair", "Doctor", "Entry points")
                // The doctor reads multipathd's config with multipath's own parser (MultipathConfig).
                .whereLayer("Multipath").mayOnlyBeAccessedByLayers("Transport", "Doctor")
                .whereLayer("Scsi").mayOnlyBeAccessedByLayers("Transport", "Multipath", "Entry points")
                .whereLayer("Nvme").mayOnlyBeAccessedByLayers("Transport")
                .whereLayer("Config").mayOnlyBeAccessedByLayers("Entry points")
                // The one seam to the host: csi reaches it only through volume; the server that carries csi
                // holds its own socket file there (by descriptor, under the kubelet root).
                .whereLayer("Os").mayOnlyBeAccessedByLayers("Volume", "State", "Transport", "Multipath", "Scsi",
                        "Nvme", "Server", "Doctor", "Config", "Entry points")
                // os alone: it re-types the JNI layer's exceptions at its seam (SyscallException) and loads the
                // library for the entry points (os.host.SyscallLibrary).
                .whereLayer("Natives").mayOnlyBeAccessedByLayers("Os")
                .check(classes);
    }

    @Test
    void theVolumeLayerKeepsItsOwnOrder() {
        // Inside volume: its lifecycle (the write side and NodeVolumes) over its read side over what both share,
        // so a reader never reaches for what changes a volume, and the records' view knows neither side.
        layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("Lifecycle").definedBy("dev.blocknode.volume")
                .layer("Read side").definedBy("dev.blocknode.volume.read..")
                .layer("Shared").definedBy("dev.blocknode.volume.record..", "dev.blocknode.volume.kubelet..",
                        "dev.blocknode.volume.request..", "dev.blocknode.volume.filesystem..",
                        "dev.blocknode.volume.encryption..")
                .whereLayer("Lifecycle").mayNotBeAccessedByAnyLayer()
                .whereLayer("Read side").mayOnlyBeAccessedByLayers("Lifecycle")
                .whereLayer("Shared").mayOnlyBeAccessedByLayers("Lifecycle", "Read side")
                .check(classes);
    }

    @Test
    void theUtilitiesUseNoLayer() {
        layers()
                .whereLayer("Outcome").mayNotAccessAnyLayer()
                .whereLayer("Logging").mayNotAccessAnyLayer()
                .whereLayer("Metrics").mayNotAccessAnyLayer()
                .whereLayer("Faults").mayNotAccessAnyLayer()
                // config holds the flags' values, --log-format's and --device-wait's among them.
                .whereLayer("Config").mayOnlyAccessLayers("Logging", "Os")
                .check(classes);
    }

    @Test
    void onlyTheOsPackagesCallTheNativeMethods() {
        noClasses().that(not(resideInAPackage("dev.blocknode.os..")))
                .should().dependOnClassesThat().haveFullyQualifiedName("dev.blocknode.os.natives.LinuxNative")
                .check(classes);
    }

    @Test
    void theStagingRecordsAnswerPublicationsAndNeverAskThem() {
        // One owner of which device numbers a record names: Publications asks StagingRecords, not the reverse.
        noClasses().that().haveFullyQualifiedName("dev.blocknode.volume.record.StagingRecords")
                .should().dependOnClassesThat().haveFullyQualifiedName("dev.blocknode.volume.record.Publications")
                .check(classes);
    }

    @Test
    void theImportSeesTheWholePlugin() {
        // A rule over an empty import passes vacuously: make sure the classes are really there.
        for (String name : new String[]{"dev.blocknode.Plugin", "dev.blocknode.volume.VolumeStager",
                "dev.blocknode.os.natives.LinuxNative", "dev.blocknode.state.v1.StagingRecord"}) {
            assertEquals(name, classes.get(name).getName());
        }
    }
}
