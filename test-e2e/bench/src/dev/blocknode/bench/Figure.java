package dev.blocknode.bench;

/** What every figure measures with: the run it belongs to, and the run's settings, volumes and report. */
abstract class Figure {

    final BenchRun run;
    final BenchOptions o;
    final Volumes volumes;
    final Report report;

    Figure(BenchRun run) {
        this.run = run;
        this.o = run.o;
        this.volumes = run.volumes;
        this.report = run.report;
    }
}
