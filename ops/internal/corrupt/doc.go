// Package corrupt turns the keys package's decode errors into store.corrupt errors for the ops,
// leaving udb errors (which the caller's retry loop acts on) unchanged.
package corrupt
