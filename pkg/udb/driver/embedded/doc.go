// Package embedded is berth's default udb driver: FoundationDB semantics on
// pebble, in one process. file://PATH stores durably; mem:// keeps everything
// in memory for tests.
//
// Commits go through one committer goroutine that resolves conflicts with a
// range-based resolver (FoundationDB's rules), applies a group of
// transactions as one pebble batch and syncs it once (group commit), then
// publishes a pebble snapshot as the newest read version. Reads run against
// the snapshot taken at the transaction's read version, so they are MVCC
// reads; versions advance with time (about 1e6 per second) so that the
// 5-second transaction_too_old window matches FoundationDB.
package embedded
