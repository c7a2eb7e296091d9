/**
 * Test-only crash and pause points of the volume lifecycle, named in one enum so that the crash matrix covers
 * each of them; unarmed in production. A utility: any layer may call it, and it uses no layer.
 */
package dev.blocknode.faults;
