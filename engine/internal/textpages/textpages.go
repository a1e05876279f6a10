// Package textpages gives back the pages of berth's own binary that start-up mapped and the
// engine does not use.
//
// The kernel maps an executable's code and read-only data from the page cache, and recent
// kernels keep a file's cache in large folios (up to 2 MiB, read ahead read_ahead_kb at a
// time) and map a whole folio on a fault. An engine that runs a small part of its 40 MiB of
// code and read-only data so has nearly all of it resident. Release, called a second after
// the engine first serves, unmaps those pages, turns off huge mappings and read-ahead for
// them, and drops the file's cached pages no process maps, so that each page the engine
// uses from then on comes back alone. See docs/benchmarks.md (Memory).
package textpages
