package dev.blocknode.scsi;

/** Ready-made VPD 0x83 pages for tests outside this package. */
public final class VpdTestPages {

    private VpdTestPages() {
    }

    /** A page with an NAA and a T10 vendor id designator for the LUN, as LIO answers. */
    public static byte[] naaAndT10(String naaHex, String t10) {
        return Vpd.page(Vpd.naa(naaHex), Vpd.t10(t10), Vpd.relativeTargetPort(1));
    }
}
