// Package namespace holds the namespace operations: create (validated, unique by name), get,
// resolve by name, list and the idempotent creation of the "default" namespace.
package namespace
