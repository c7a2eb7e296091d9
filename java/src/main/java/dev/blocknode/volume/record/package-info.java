/**
 * The staging records as the volume layer reads and writes them: StagingRecords (state's store, its failures as
 * errors that name the volume, what a record says of its device and transport: the one owner of which device
 * numbers a record names), Publications (where a staged volume is mounted, by device number, asking
 * StagingRecords for the numbers; StagingRecords never calls it) and RecordedStagedVolumes (the records as a
 * transport asks about them). Part of the volume layer; it may use state, transport, os and the utilities.
 */
package dev.blocknode.volume.record;
