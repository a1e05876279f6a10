// Package keys names every udb key berth stores, mirroring the Rivet engine's key space: one type
// per key with its fields, Pack, an Unpack that checks every constant segment, and its value codec.
package keys
