# shellcheck shell=bash
# JVM settings shared by the host, which trains the AOT caches (../e2e.sh), and the guest, which runs
# the plugin and GuestClient with them (smoke.sh). A JDK 25 AOT cache is only used by a JVM whose
# class path and GC match the training run's, so both sides must take them from here.

# C1 only and the serial GC: these JVMs live for a minute, and under TCG C2's compilations cost more
# than they return. No AVX: the guest's CPU has none (run-guest.sh: TCG emulates AVX at a high cost), and the
# AOT cache keeps code generated at training, on the host: trained with AVX, it dies with SIGILL in the guest.
# The fixed netty machine id spares netty's search for a MAC address that the guest (no NIC) does not have, and
# the warning it logs when it finds none. --sun-misc-unsafe-memory-access=allow, as the image's JVM runs
# (deploy/jvm.args): without it JDK 25 warns on Netty's first use of sun.misc.Unsafe and Netty falls back to the
# foreign-memory API, which loads ~300 classes more at every start (3862 instead of 4155 on the host).
# shellcheck disable=SC2034  # for the scripts that source this file
VM_JAVA_OPTS=(-XX:UseAVX=0 -XX:TieredStopAtLevel=1 -XX:+UseSerialGC --enable-native-access=ALL-UNNAMED
              --sun-misc-unsafe-memory-access=allow -Dio.grpc.netty.shaded.io.netty.machineId=02:00:00:00:00:01)
