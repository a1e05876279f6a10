// Package cursor is the page cursor shared by the runner and envoy lists: an opaque, URL-safe
// token naming the last item's (create_ts, tie), and the Rivet engine's bare create_ts accepted too.
package cursor
