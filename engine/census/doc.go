// Package census counts the store's actors, runners and envoys by state and its pending
// allocations, for the gauges on /metrics, with a periodic scan bounded in rows.
package census
