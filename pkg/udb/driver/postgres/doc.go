// Package postgres is the udb driver for PostgreSQL (postgres://...): several
// engine processes share one database with FoundationDB's transaction semantics.
//
// The store is multi-version: every commit writes new rows tagged with its
// commit version, so any read version inside the MVCC window can be served
// later (SetReadVersion) and a transaction's reads are one consistent
// snapshot without holding a PostgreSQL transaction open. Commits are
// serialised by the lock on the single row of udb_meta, which also holds the
// last commit version; under that lock a commit checks its read conflict
// ranges against udb_writes, the last write version of every key as a step
// function (FoundationDB's rule: a conflict iff a range read serializably was
// written by a commit after the read version), applies atomic operations to
// the newest values, and records its own write ranges. Because the check and
// the writes happen inside PostgreSQL under that lock, the rules hold across
// processes. History older than the 5 s window is pruned.
//
// One limit is PostgreSQL's, not FoundationDB's: keys live in btree indexes,
// whose entries hold at most about 2,700 bytes after compression, so a commit
// writing a longer incompressible key fails with key_too_large (2102) and
// writes nothing (FoundationDB allows 10,000 bytes). Engine keys are tuples
// far below that.
package postgres
