// Package transfer copies a udb key space from one store to another through a
// byte stream: Export writes every key of a database to an io.Writer, Import
// loads such a stream into an empty database. It moves data between drivers
// (embedded, PostgreSQL, FoundationDB) byte for byte.
//
// Export reads at one read version, in chunks of at most 1 MiB, moving to a
// newer version only if the export outlives the store's window (unless
// Options.RequireSnapshot); Import verifies every block and the whole stream
// and leaves the destination empty if either is bad. docs/udb.md ("Export and
// import") describes the consistency rules and the stream format, version 1.
package transfer
