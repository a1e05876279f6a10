// Package postgres is the udb driver for PostgreSQL (postgres://...): several
// engine processes share one database with FoundationDB's transaction semantics.
//
// The store is multi-version (every commit writes rows tagged with its
// version), and commits are serialised by a row lock under which each checks
// its read conflicts and applies its writes inside PostgreSQL, so the rules
// hold across processes. docs/udb.md ("The PostgreSQL driver") describes the
// design, its one limit of its own (keys of about 2,700 bytes) and the URL
// options.
package postgres
