package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/jackc/pgx/v5"
)

// Options configure a PostgreSQL database.
type Options struct {
	// Conn is the parsed connection configuration (pgx.ParseConfig).
	Conn *pgx.ConnConfig
	// MaxConns bounds the connections this process opens (default 8), not
	// counting the one that listens for commits while watches are armed.
	MaxConns int
	// MaxWatches bounds outstanding watches in this process (default 10,000).
	MaxWatches int
}

// Timeouts for work that the udb interface gives no context for: snapshot
// reads (txn.Snapshot has none) and cleanup.
const (
	queryTimeout = 30 * time.Second
	closeTimeout = 5 * time.Second
)

// tickVersions is how stale the last commit version may be before taking a
// read version advances it to the clock: on an idle database versions still
// move with time, as FoundationDB's do, so new transactions get at least
// 4.5 s of their 5 s window. An advance is a write to udb_meta: it takes the
// lock every commit takes and waits behind them. With 10 ms, 16 clients
// creating actors on a loaded 2-core machine (a commit every 10-80 ms) took
// about two read versions per create (pg_stat_statements: 1,000-1,200 for
// 500-600 creates, 1.2-3 ms each against 0.03 ms for a read), and each that
// advanced queued for the lock like a commit. 500 ms of versions.
const tickVersions = udb.VersionsPerSecond / 2

// clockSQL is the version clock: microseconds since the epoch on the
// server's clock, the same for every process sharing the database.
const clockSQL = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

// DB is a udb database stored in PostgreSQL.
type DB struct {
	pool *pool

	// ctx bounds work started by reads and watches; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	// advanced is added to the clock by AdvanceVersions (tests).
	advanced atomic.Int64

	inject struct {
		sync.Mutex
		code    int
		applied bool
	}
	prune struct {
		sync.Mutex
		last    time.Time      // the last time a commit of this process raised the horizon
		running bool           // a prune started by startPrune has not finished
		closed  bool           // Close was called: no prune starts
		wg      sync.WaitGroup // the prune running
		// logDeleted counts the write-log rows deleted since the write log was
		// last vacuumed; only the running prune uses it.
		logDeleted int64
	}
	pruneLockTimeout string

	watches *watcher
	commits commitQueue // commits waiting for the group in flight (group.go)

	// beforeCommit, set by tests, runs on the commit's connection just
	// before COMMIT is sent.
	beforeCommit func(c *pgx.Conn)

	closeOnce sync.Once
}

var (
	_ udb.Database      = (*DB)(nil)
	_ udb.Clock         = (*DB)(nil)
	_ udb.FaultInjector = (*DB)(nil)
)

// Open connects to the database, creating the udb tables if they are
// missing.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Conn == nil {
		return nil, errors.New("postgres: Options.Conn is nil")
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	conn := opts.Conn.Copy()
	if conn.RuntimeParams == nil {
		conn.RuntimeParams = map[string]string{}
	}
	if _, set := conn.RuntimeParams["enable_seqscan"]; !set {
		// Every statement of the driver has an index to go by. The history tables churn:
		// pruning keeps a few thousand live rows in pages that hold tens of thousands of
		// dead ones until autovacuum comes by (at most once a minute), and statistics taken
		// while the table was small make the planner prefer scanning every page (3-11 ms
		// under the commit lock, where the index takes 0.1 ms). docs/udb.md
		conn.RuntimeParams["enable_seqscan"] = "off"
	}
	db := &DB{pool: newPool(conn, opts.MaxConns), pruneLockTimeout: pruneLockTimeout}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	db.watches = newWatcher(db, opts.MaxWatches)
	err := db.pool.withConn(ctx, func(c *pgx.Conn) error { return ensureSchema(ctx, c) })
	if err != nil {
		db.pool.close()
		db.cancel()
		return nil, fmt.Errorf("postgres: open %s@%s:%d/%s: %w", opts.Conn.User, opts.Conn.Host, opts.Conn.Port, opts.Conn.Database, err)
	}
	return db, nil
}

// CreateTransaction implements udb.Database.
func (db *DB) CreateTransaction() (udb.Transaction, error) {
	if db.ctx.Err() != nil {
		return nil, errPoolClosed
	}
	return txn.New(backend{db}), nil
}

// Transact implements udb.Database.
func (db *DB) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, db, f)
}

// ReadTransact implements udb.Database.
func (db *DB) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, db, f)
}

// AdvanceVersions implements udb.Clock: this process's commits and read
// versions move n versions ahead of the clock. The jump is shared with every
// process through the stored version, which only ever increases.
func (db *DB) AdvanceVersions(n int64) { db.advanced.Add(n) }

// InjectCommitError implements udb.FaultInjector: this process's next
// commit fails with code, after being applied if applied is true.
func (db *DB) InjectCommitError(code int, applied bool) {
	db.inject.Lock()
	db.inject.code, db.inject.applied = code, applied
	db.inject.Unlock()
}

func (db *DB) takeInjected() (code int, applied bool) {
	db.inject.Lock()
	defer db.inject.Unlock()
	code, applied = db.inject.code, db.inject.applied
	db.inject.code = 0
	return code, applied
}

// Close fails outstanding watches and closes the connections. Transactions
// still open fail afterwards.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.cancel()
		db.watches.stop()
		db.prune.Lock()
		db.prune.closed = true
		db.prune.Unlock()
		db.waitPruned()
		db.pool.close()
	})
	return nil
}

// readVersionSQL returns the last commit version, first advancing it to the
// clock if it is below least($2, clock - $3): an advance is an empty commit,
// serialised with the others by the row lock. $1 is AdvanceVersions' offset.
// The returned version is committed, so every commit acknowledged before the
// statement is at or below it, and every later commit gets a higher one.
const readVersionSQL = `
WITH c AS MATERIALIZED (SELECT ` + clockSQL + ` + $1::bigint AS now),
t AS (
	UPDATE udb_meta SET version = greatest(udb_meta.version + 1, c.now) FROM c
	WHERE udb_meta.id = 1 AND udb_meta.version < least($2::bigint, c.now - $3::bigint)
	RETURNING udb_meta.version)
SELECT coalesce((SELECT version FROM t), m.version), m.horizon, c.now FROM udb_meta m, c WHERE m.id = 1`

// versionState is what readVersionSQL returns.
type versionState struct {
	version, horizon, now int64
}

// versions runs readVersionSQL until the version reaches its target. When
// the advance finds the row locked by a commit, it waits, sees the commit's
// newer version and skips the advance, while the statement's own snapshot
// still shows the version before that commit: too stale, but the next
// statement sees the commit.
func (db *DB) versions(ctx context.Context, atLeast, stale int64) (versionState, error) {
	var s versionState
	err := db.pool.withConn(ctx, func(c *pgx.Conn) error {
		for range 8 {
			err := c.QueryRow(ctx, readVersionSQL, db.advanced.Load(), atLeast, stale).Scan(&s.version, &s.horizon, &s.now)
			if err != nil || s.version >= min(atLeast, s.now-stale) {
				return err
			}
		}
		return nil // still behind after commits kept landing: a valid, older version
	})
	if err != nil {
		return s, fmt.Errorf("postgres: read version: %w", err)
	}
	return s, nil
}

// readVersion takes the newest read version.
func (db *DB) readVersion(ctx context.Context) (*snapshot, error) {
	s, err := db.versions(ctx, math.MaxInt64, tickVersions)
	if err != nil {
		return nil, err
	}
	return db.newSnapshot(s.version, s.now), nil
}

// snapshotAt serves a read version chosen by the caller: future_version if
// no commit has reached it yet (the clock has not), transaction_too_old if it
// left the window or its history was pruned.
func (db *DB) snapshotAt(ctx context.Context, v int64) (*snapshot, error) {
	s, err := db.versions(ctx, v, 0)
	if err != nil {
		return nil, err
	}
	switch {
	case v > s.version:
		return nil, udb.Error{Code: udb.CodeFutureVersion}
	case v < s.horizon || s.now-v > udb.MVCCWindowVersions:
		return nil, udb.Error{Code: udb.CodeTransactionTooOld}
	}
	return db.newSnapshot(v, s.now), nil
}

// backend adapts DB to txn.Backend.
type backend struct{ db *DB }

func (b backend) ReadVersion(ctx context.Context) (txn.Snapshot, error) {
	return b.db.readVersion(ctx)
}

func (b backend) SnapshotAt(ctx context.Context, v int64) (txn.Snapshot, error) {
	return b.db.snapshotAt(ctx, v)
}

func (b backend) Commit(ctx context.Context, req *txn.CommitRequest) (txn.CommitResult, error) {
	return b.db.commit(ctx, req)
}

func (b backend) ArmWatches(ws []*txn.Watch) {
	if len(ws) > 0 {
		b.db.watches.arm(ws)
	}
}

func (b backend) DisarmWatch(w *txn.Watch) { b.db.watches.remove(w) }
