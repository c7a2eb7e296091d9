package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.CryptRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.volume.encryption.CryptMappingName;
import dev.blocknode.volume.encryption.Luks2;
import dev.blocknode.volume.encryption.Passphrase;
import dev.blocknode.volume.filesystem.DeviceContent;
import dev.blocknode.volume.filesystem.DeviceProbe;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The LUKS2 step of a stage, between fencing and the filesystem, and its undoing: a blank attached device is
 * formatted LUKS2, a LUKS2 one is opened with the volume's passphrase, anything else is refused; what follows (the
 * filesystem, a block publication) uses the opened device. Each step is recorded before it changes the device or the
 * node, as the filesystem's format is: the mapping's name before it is opened, formatting_started before luksFormat.
 */
final class VolumeEncryption {

    private static final Logger LOG = Logger.getLogger(VolumeEncryption.class.getName());

    /** blkid's TYPE for a LUKS header (either version: cryptsetup then refuses a LUKS1 one as not luks2). */
    static final String LUKS_SIGNATURE = "crypto_LUKS";

    private final Host host;
    private final StagingRecords records;
    private final Luks2 luks;
    private final DeviceProbe probe;

    VolumeEncryption(Host host, StagingRecords records) {
        this.host = host;
        this.records = records;
        this.luks = new Luks2(host.commands());
        this.probe = new DeviceProbe(host.commands());
    }

    /** The volume's mapping, open over {@code attached}, as this stage left it or an earlier attempt did. */
    Optional<Attachment> openedOver(String volumeId, Attachment attached) throws VolumeException {
        String name = CryptMappingName.of(volumeId);
        Path node;
        FileStat stat;
        try {
            // udev makes /dev/mapper/<name> a link to ../dm-N: the device node is where it leads
            node = mappedNode(name).toRealPath();
            stat = host.mounter().stat(node);
        } catch (NoSuchPathException | java.nio.file.NoSuchFileException absent) {
            return Optional.empty();
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect dm-crypt mapping " + name + " of volume " + volumeId, e);
        }
        try {
            Optional<String> kernelName = host.blockDevices().kernelName(stat.rdev());
            if (!stat.isBlockDevice() || kernelName.isEmpty()
                    || !host.blockDevices().holders(attached.number()).contains(kernelName.get())) {
                throw VolumeException.precondition("dm-crypt mapping " + name + " of volume " + volumeId + " is open,"
                        + " but not over its device " + attached.device() + " (" + attached.number() + "); close it"
                        + " with cryptsetup close " + name + " once nothing uses it");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell what dm-crypt mapping " + name + " of volume " + volumeId
                    + " is over", e);
        }
        return Optional.of(new Attachment(attached.transport(), node, stat.rdev(), attached.identity(),
                attached.details()));
    }

    /**
     * Formats a blank device LUKS2 (or finishes an interrupted format of ours) and opens it; the caller has checked
     * that nothing on the node holds the device. The record names the mapping and, once open, the opened device.
     *
     * @throws VolumeException FAILED_PRECONDITION for a device that holds anything but a LUKS header, and for a
     *                         passphrase that opens no key slot (nothing is opened)
     */
    Attachment open(String volumeId, Passphrase passphrase, Attachment attached, Optional<StagingRecord> existing,
                    StagingRecord.Builder record) throws VolumeException {
        String name = CryptMappingName.of(volumeId);
        CryptRecord.Builder crypt = record.getCryptBuilder().setMappingName(name).clearOpened();
        if (interruptedFormat(existing, attached) || isBlank(volumeId, attached)) {
            records.save(record.setCrypt(crypt.setFormattingStarted(true).setFormattedHere(false)).build());
            luks.format(volumeId, attached.device(), passphrase);
            CrashPoints.reach(CrashPoint.STAGE_CRYPT_FORMATTED);
            record.setCrypt(crypt.setFormattingStarted(false).setFormattedHere(true));
            LOG.info(() -> "formatted blank device " + attached.device() + " of volume " + volumeId + " LUKS2");
        } else {
            luks.checkPassphrase(volumeId, attached.device(), passphrase);
        }
        records.save(record.setCrypt(crypt).build());
        luks.open(volumeId, attached.device(), name, passphrase);
        CrashPoints.reach(CrashPoint.STAGE_CRYPT_OPENED);
        Attachment opened = openedOver(volumeId, attached).orElseThrow(() -> VolumeException.internal(
                "cryptsetup opened volume " + volumeId + "'s device " + attached.device() + " as " + name
                        + ", but " + mappedNode(name) + " is not there", null));
        record.setCrypt(crypt.setOpened(DeviceRecord.newBuilder().setPath(opened.device().toString())
                .setMajor(opened.number().major()).setMinor(opened.number().minor())));
        records.save(record.build());
        return opened;
    }

    /** Records the mapping an earlier attempt left open (the retry of a stage cut short after the open). */
    static void recordOpened(StagingRecord.Builder record, Attachment opened) {
        record.getCryptBuilder().setMappingName(CryptMappingName.of(record.getVolumeId()))
                .setOpened(DeviceRecord.newBuilder().setPath(opened.device().toString())
                        .setMajor(opened.number().major()).setMinor(opened.number().minor()));
    }

    /**
     * Closes the record's mapping, if it names one; a mapping that is not there is closed already.
     *
     * @return whether the record names a mapping (now closed)
     */
    boolean close(StagingRecord record) throws VolumeException {
        if (record.hasCrypt() && !record.getCrypt().getMappingName().isEmpty()) {
            luks.close(record.getVolumeId(), record.getCrypt().getMappingName());
            return true;
        }
        return false;
    }

    private Path mappedNode(String name) {
        return host.paths().dev().resolve("mapper").resolve(name);
    }

    /** An earlier attempt on this same device began luksFormat and never said it finished. */
    private static boolean interruptedFormat(Optional<StagingRecord> existing, Attachment attached) {
        return existing.filter(StagingRecord::hasCrypt)
                .filter(r -> r.getCrypt().getFormattingStarted() && !r.getCrypt().getFormattedHere())
                .filter(r -> r.getDevice().getIdentity().equals(attached.identity())
                        && StagingRecords.deviceNumber(r).equals(attached.number()))
                .isPresent();
    }

    /** Blank: format it. A LUKS header: open it. Anything else is never formatted over. */
    private boolean isBlank(String volumeId, Attachment attached) throws VolumeException {
        DeviceContent content;
        try {
            content = probe.probe(attached.device());
        } catch (IOException e) {
            throw VolumeException.internal("cannot probe device " + attached.device() + " of volume " + volumeId, e);
        }
        return switch (content) {
            case DeviceContent.Blank ignored -> true;
            case DeviceContent.OtherSignature other when other.description().startsWith(LUKS_SIGNATURE) -> false;
            default -> throw VolumeException.precondition("device " + attached.device() + " of volume " + volumeId
                    + " asks for LUKS2 but holds " + content.describe() + "; refusing to encrypt a device that"
                    + " holds anything");
        };
    }
}
