// Package opstest helps the ops tests: an embedded in-memory store, committed and read-only
// transactions, and transactions held open so tests can choose the order of concurrent commits.
package opstest
