// Package sqlite is the actor SQLite page store of envoy protocol v8: the pages of each
// actor's database in udb (keys/actor_sqlite.go), read by page number, written by single or
// staged commits fenced by the actor's generation, and SQL run by the engine against them.
package sqlite
