// Package record reads the fields of one stored record (a runner, an envoy) key by key with a
// sticky first error, reporting undecodable values and missing required fields as store.corrupt.
package record
