// Package txn is the client half of a udb transaction, shared by drivers that
// are not FoundationDB itself: read-your-writes, conflict-range bookkeeping,
// key selectors, size limits, deferred errors, options and the OnError loop.
// A driver supplies a Backend: snapshots at read versions and a commit path.
package txn
