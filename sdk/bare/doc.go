// Package bare encodes and decodes BARE (baremessages.org), the binary format of the Rivet runner
// protocol and of berth's stored values, strictly: canonical varints only, checked lengths, no panics.
//
// A Writer appends values; a Reader consumes them with a sticky error, so a decoder reads every
// field and checks Err (or Done, which also rejects trailing bytes) once at the end. The rules
// match @rivetkit/bare-ts, the codec on the TypeScript side:
//
//   - uint is LEB128 (7 bits per byte, low bits first). The Reader rejects non-minimal encodings
//     (a final 0x00 byte after the first), more than 10 bytes, and values above 2^64-1.
//   - int is a zig-zag uint; u8…u64, i8…i64, f32 and f64 are fixed-width little-endian.
//     f32 and f64 must not be NaN.
//   - bool and the optional tag are one byte, 0 or 1; anything else is an error.
//   - str and data are a uint length then the bytes; str must be valid UTF-8.
//   - list and map counts are bounded by the remaining input, so a corrupt count never makes a
//     decoder allocate more than the input could hold; ReadMap rejects duplicate keys.
//
// Stored values (not wire frames) are "versioned BARE": a 2-byte little-endian schema version,
// then the BARE body; see AppendVersion and ReadVersion.
package bare
