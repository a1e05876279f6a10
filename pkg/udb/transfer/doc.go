// Package transfer copies a udb key space from one store to another through a
// byte stream: Export writes every key of a database to an io.Writer, Import
// loads such a stream into an empty database. It moves data between drivers
// (embedded, PostgreSQL, FoundationDB) byte for byte.
//
// # What is copied
//
// The normal key space, every key in ["", "\xff"), with its value. System keys
// (under \xff) belong to the store and are neither exported nor imported.
//
// # Consistency
//
// Export takes one read version and reads the whole key space at it, in
// chunks of at most 1 MiB, each in a transaction of its own (so no
// transaction grows large or lives long). The result is a consistent
// snapshot of the database as of that version, provided the export finishes
// within the store's MVCC window (about 5 s on every driver, as on
// FoundationDB). If that version becomes too old (transaction_too_old, 1007),
// Export continues from the next unread key at a newer read version: each key
// then holds the value it had at some version between the first and the last
// read version, and the stream records both. Stop the writers (the engine)
// for a consistent copy of a large store, or set Options.RequireSnapshot to
// fail instead of moving to a newer version.
//
// Import writes in transactions of at most 1 MiB of keys and values, well
// under FoundationDB's 10 MB limit and its 5 s window. It refuses a
// destination that holds any key unless Options.Overwrite is set, in which
// case it first clears the destination's whole key space. Every block of the
// stream is verified (CRC-32C) before any of its records is written, and the
// whole stream (SHA-256) before Import returns; if the stream is truncated or
// corrupt, Import clears what it wrote, so the destination is left empty, and
// returns an error that says what is wrong and where.
//
// # Stream format, version 1
//
// Integers are big-endian unless marked uvarint (encoding/binary's unsigned
// varint).
//
//	header   magic   8 bytes  "BERTHKV\n"
//	         version uint16   1
//	         flags   uint16   0 (reserved; a reader rejects other values)
//	         readver int64    the read version the export started at
//	         crc     uint32   CRC-32C (Castagnoli) of the 20 bytes above
//	block    tag     byte     'B'
//	(0 or    count   uvarint  records in the block, at least 1
//	 more)   length  uvarint  payload bytes, at most 16 MiB
//	         payload          count records: uvarint key length, key,
//	                          uvarint value length, value
//	         crc     uint32   CRC-32C of the payload
//	trailer  tag     byte     'E'
//	         keys    uint64   records in the stream
//	         bytes   uint64   sum of the lengths of every key and value
//	         lastver int64    the read version of the last chunk read
//	         digest  32 bytes SHA-256 of every byte of the stream before it
//
// Keys are strictly increasing across the whole stream and lie below \xff;
// keys and values respect FoundationDB's limits (10,000 and 100,000 bytes).
// Nothing may follow the trailer. A reader rejects a stream that breaks any of
// these rules, naming the offset and the rule.
package transfer
