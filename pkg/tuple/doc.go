// Package tuple implements the FoundationDB tuple layer in pure Go: it packs typed tuples into
// order-preserving byte keys, byte-compatible with the official encoders, and unpacks them safely.
package tuple
