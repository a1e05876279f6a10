// Package engine is berth's composition root: from a validated config it opens the store and serves api-public (guard port) and api-peer.
// Start brings everything up or nothing; Shutdown stops accepting, lets in-flight requests finish within a deadline, then closes the store.
package engine
