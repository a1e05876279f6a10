package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// schemaFormat is stored in udb_meta.format; a database with another value
// was written by an incompatible version of this driver. Format 2 records
// writes for conflict checks in udb_write_log where format 1 kept the step
// function udb_writes; ensureSchema upgrades a format 1 store (upgradeFrom1).
// Every commit reads the format under the commit lock, so that a process
// left running on an older format fails its commits once the store moved on
// rather than checking conflicts where nobody records them.
const schemaFormat = 2

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
//   - udb_write_log: the write conflict ranges of every commit within the
//     window, one row per range: [key, end_key) at version, end_key NULL for
//     the single key. A commit's read ranges conflict with the rows after
//     their read version that share a key with them (conflictSQL); rows at
//     or below the horizon concern no admissible read version and go.
var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS udb_meta (
		id       int PRIMARY KEY CHECK (id = 1),
		version  bigint NOT NULL,
		horizon  bigint NOT NULL,
		format   int NOT NULL
	)`,
	`INSERT INTO udb_meta (id, version, horizon, format) VALUES (1, 0, 0, ` + strconv.Itoa(schemaFormat) + `) ON CONFLICT (id) DO NOTHING`,
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
	// The primary key finds the rows that begin inside a read range; the
	// version index, those of every range to prune; udb_write_log_ranges the
	// few wider ranges, which may begin before a read range and cover it.
	`CREATE TABLE IF NOT EXISTS udb_write_log (
		key      bytea NOT NULL,
		version  bigint NOT NULL,
		end_key  bytea,
		PRIMARY KEY (key, version)
	)`,
	`CREATE INDEX IF NOT EXISTS udb_write_log_version ON udb_write_log (version)`,
	`CREATE INDEX IF NOT EXISTS udb_write_log_ranges ON udb_write_log (version) WHERE end_key IS NOT NULL`,
}

// ensureSchema creates the tables if needed, upgrades a store of an earlier
// format and checks the format.
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
	if format == 1 {
		if err := upgradeFrom1(ctx, tx); err != nil {
			return fmt.Errorf("upgrading the store from udb format 1: %w", err)
		}
		format = schemaFormat
	}
	if format != schemaFormat {
		return formatError(format)
	}
	return tx.Commit(ctx)
}

// upgradeFrom1 moves a format 1 store to format 2 inside ensureSchema's
// transaction, whose UPDATE takes the commit lock (the udb_meta row) until it
// commits. Writes recorded before it are in udb_writes only, so the horizon
// rises to the last commit version: a transaction whose read version is
// older fails its commit with transaction_too_old (and retries) rather than
// being checked against a log that lacks the writes after its read. Dropping
// udb_writes makes a process still running format 1 fail every commit from
// then on ("relation udb_writes does not exist") instead of checking its
// reads where nobody records writes any more. docs/deploy.md says how to
// upgrade.
func upgradeFrom1(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `UPDATE udb_meta SET format = $1, horizon = version WHERE id = 1`, schemaFormat); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS udb_writes`); err != nil {
		return err
	}
	slog.Info("udb: upgraded the PostgreSQL store from format 1 to 2; processes of earlier versions can no longer commit to it",
		"component", "udb/postgres")
	return nil
}

// formatError is the error for a store of a format this driver does not run.
func formatError(format int) error {
	return fmt.Errorf("the database holds udb format %d; this process runs format %d (a store is upgraded by the newer version, never downgraded)", format, schemaFormat)
}
