// Package udb is berth's storage interface: an ordered, transactional key-value
// store with FoundationDB semantics, implemented by the drivers under driver/.
//
// The shape follows the official FoundationDB Go binding so that the fdb driver
// stays a thin adapter: read versions, serializable and snapshot reads,
// read- and write-conflict ranges, optimistic commit (error 1020), the OnError
// retry loop, atomic operations, key selectors, versionstamps and watches, with
// FoundationDB's size limits and error codes. Engine code depends on this
// package and pkg/tuple only, never on a driver or on the FoundationDB binding.
//
// Open picks a driver by URL scheme; drivers register themselves with Register,
// so import each driver a program needs for its side effect, as engine/engine.go
// does: pkg/udb/driver/embedded, .../postgres and .../fdb. With prefix=HEX in any
// URL, Open returns a view of the store under that key prefix (WithPrefix), so
// several users can share one store. docs/udb.md describes the semantics.
package udb
