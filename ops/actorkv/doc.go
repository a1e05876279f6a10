// Package actorkv holds the operations on an actor's private KV store that the runner protocol
// carries (get, list, put, delete, delete range, drop), with the Rivet engine's limits, each
// value's metadata and a per-actor size counter for the storage quota.
//
// The store's layout is keys.ActorKV*: one subspace per actor, values split into 10,000-byte
// chunks. Every op takes a transaction and never opens its own; reads are serializable unless an
// op says otherwise. Who may call them (the runner that hosts the actor) is the caller's check.
package actorkv
