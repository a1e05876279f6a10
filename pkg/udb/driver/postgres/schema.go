package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// schemaFormat is stored in udb_meta.format; a database with another value
// was written by an incompatible version of this driver.
const schemaFormat = 1

// schemaLockKey is the advisory lock that serialises schema creation by
// processes opening the same database at once.
const schemaLockKey = 0x6265727468756462 // "berthudb"

// The tables live in the first schema of the connection's search_path, so
// one database can hold several independent stores (search_path=... in the
// URL).
//
//   - udb_meta: one row. version is the last commit version: every row of
//     udb_kv at or below it is committed, and the row's lock serialises
//     commits. horizon is the oldest read version still served: history
//     below it may have been pruned.
//   - udb_kv: every version of every key within the window. superseded_at
//     is the version that replaced or cleared the row (NULL for the
//     newest), so reads find the row visible at their version and pruning
//     finds the rows no reader needs any more. value NULL is a clear row,
//     written by earlier versions of the driver only.
//   - udb_writes: the last write version of every key, as a step function:
//     each row says that keys from it up to the next row were last written
//     at version. Rows at or below the horizon read as "long ago".
var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS udb_meta (
		id       int PRIMARY KEY CHECK (id = 1),
		version  bigint NOT NULL,
		horizon  bigint NOT NULL,
		format   int NOT NULL
	)`,
	`INSERT INTO udb_meta (id, version, horizon, format) VALUES (1, 0, 0, 1) ON CONFLICT (id) DO NOTHING`,
	`CREATE TABLE IF NOT EXISTS udb_kv (
		key            bytea NOT NULL,
		version        bigint NOT NULL,
		value          bytea,
		superseded_at  bigint,
		PRIMARY KEY (key, version)
	)`,
	// The newest row of each key: reads, range clears, point writes and atomic
	// operations find it here. With the version beside the key, a range read
	// bounds both in this index, as the primary key would, and the planner
	// takes the smaller index (pageSQL). It replaces udb_kv_newest (key),
	// which stores made before it had.
	`CREATE INDEX IF NOT EXISTS udb_kv_latest ON udb_kv (key, version) WHERE superseded_at IS NULL`,
	`DROP INDEX IF EXISTS udb_kv_newest`,
	`CREATE INDEX IF NOT EXISTS udb_kv_superseded ON udb_kv (superseded_at) WHERE superseded_at IS NOT NULL`,
	// The history in key order: range reads find the rows superseded after
	// their version without visiting the others (pageSQL).
	`CREATE INDEX IF NOT EXISTS udb_kv_history ON udb_kv (key, superseded_at) WHERE superseded_at IS NOT NULL`,
	// Clear rows of earlier drivers, for pruneClearsSQL.
	`CREATE INDEX IF NOT EXISTS udb_kv_cleared ON udb_kv (version) WHERE value IS NULL AND superseded_at IS NULL`,
	`CREATE TABLE IF NOT EXISTS udb_writes (
		key      bytea PRIMARY KEY,
		version  bigint NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS udb_writes_version ON udb_writes (version)`,
	`INSERT INTO udb_writes (key, version) VALUES ('\x'::bytea, 0) ON CONFLICT (key) DO NOTHING`,
}

// ensureSchema creates the tables if needed and checks their format.
func ensureSchema(ctx context.Context, c *pgx.Conn) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLockKey)); err != nil {
		return err
	}
	for _, q := range schemaDDL {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	var format int
	if err := tx.QueryRow(ctx, `SELECT format FROM udb_meta WHERE id = 1`).Scan(&format); err != nil {
		return err
	}
	if format != schemaFormat {
		return fmt.Errorf("the database holds udb format %d; this driver reads format %d", format, schemaFormat)
	}
	return tx.Commit(ctx)
}
