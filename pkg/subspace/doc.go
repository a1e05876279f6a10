// Package subspace implements FoundationDB-style subspaces: a key prefix, usually a packed tuple,
// under which keys are built from tuples, recognised, unpacked and scanned as a range.
package subspace
