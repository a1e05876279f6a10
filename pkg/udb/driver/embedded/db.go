package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// versionKey holds the last commit version, written in every commit batch so
// versions keep increasing across restarts. It sorts after every key a
// transaction can address (system keys end at \xff\xff).
var versionKey = []byte("\xff\xff\xff/berth/udb/version")

// memTableSize bounds pebble's memtable, which lives outside the Go heap and
// counts in full in the process's memory once written through. berth's
// writes are small and rewrite the same keys (pings), so a small memtable
// flushes little: 8 MiB writes as fast as 64 MiB in BenchmarkDurableWrite,
// keeps a 5,000-runner engine some 30 MiB smaller, and makes every seek
// into it (each range read's first step) shallower.
const memTableSize = 8 << 20

// blockCacheSize caps pebble's block cache (its default is 8 MiB). With a small
// memtable most reads reach the sstables: at 5,000 pinging runners 8 MiB missed
// enough that decoding blocks took about 10% of the engine's CPU, and listing
// 10,000 runners needs about 64 MiB of blocks to stay out of decompression
// (BenchmarkRunnersList p50 3.6 ms with 16 MiB, 1.35 ms with 64). The cache
// fills only with blocks actually read, so a store that reads little stays small.
const blockCacheSize = 32 << 20

// Options configure an embedded database.
type Options struct {
	// Dir is the pebble directory; empty with InMemory.
	Dir string
	// InMemory keeps everything in memory (mem://).
	InMemory bool
	// FS overrides the filesystem (tests inject crashes through it).
	FS vfs.FS
	// NoSync skips the fsync of each commit group. Commits then survive a
	// process crash but not a machine crash.
	NoSync bool
	// MaxWatches bounds outstanding watches (default 10,000).
	MaxWatches int
	// MaxGroup bounds the transactions applied in one batch (default 1,024,
	// at most 65,536: the batch index is two bytes of the versionstamp).
	MaxGroup int
}

// DB is an embedded udb database.
type DB struct {
	pdb       *pebble.DB
	clock     *versionClock
	writeOpts *pebble.WriteOptions
	maxGroup  int

	// mu guards the newest state handed to new transactions.
	mu struct {
		sync.Mutex
		version  int64         // newest read version; >= snap.from
		snap     *sharedSnap   // state after the last commit
		inflight int           // commit groups applied but not yet published
		recent   []*sharedSnap // superseded snapshots, oldest first; see publish
		closed   bool
		broken   error // a failed sync: every later commit fails with it
	}

	commits chan *pendingCommit
	stop    chan struct{}
	stopped chan struct{}

	// Owned by the committer goroutine (commitLoop).
	resolver *resolver
	lastCV   int64
	inject   struct {
		sync.Mutex
		code    int
		applied bool
	}

	watches *watchSet

	// open keeps pebble from being used after Close: every snapshot read
	// holds it for reading; Close takes it for writing, then closes the
	// snapshots transactions still hold, so their reads fail cleanly.
	open struct {
		sync.RWMutex
		closed bool
	}
	live struct {
		sync.Mutex
		snaps map[*sharedSnap]struct{}
	}
}

var (
	_ udb.Database      = (*DB)(nil)
	_ udb.Clock         = (*DB)(nil)
	_ udb.FaultInjector = (*DB)(nil)
)

// Open opens or creates an embedded database.
func Open(opts Options) (*DB, error) {
	fs := opts.FS
	dir := opts.Dir
	if fs == nil {
		if opts.InMemory {
			fs = vfs.NewMem()
		} else {
			fs = vfs.Default
		}
	}
	if dir == "" && !opts.InMemory {
		return nil, errors.New("embedded: a directory is required (file://PATH)")
	}
	cache := pebble.NewCache(blockCacheSize)
	defer cache.Unref() // pebble holds its own reference while open
	pdb, err := pebble.Open(dir, &pebble.Options{
		FS:                    fs,
		Logger:                quietLogger{},
		Cache:                 cache,
		MemTableSize:          memTableSize,
		L0CompactionThreshold: 4,
	})
	if err != nil {
		if opts.FS == nil && !opts.InMemory {
			if inUse := storeInUse(dir, err); inUse != nil {
				return nil, inUse
			}
		}
		return nil, fmt.Errorf("embedded: open %q: %w", dir, err)
	}
	last, err := readLastVersion(pdb)
	if err != nil {
		_ = pdb.Close()
		return nil, err
	}
	db := &DB{
		pdb:       pdb,
		clock:     newVersionClock(last + 1),
		writeOpts: pebble.Sync,
		maxGroup:  opts.MaxGroup,
		commits:   make(chan *pendingCommit, 4096),
		stop:      make(chan struct{}),
		stopped:   make(chan struct{}),
		resolver:  newResolver(),
		lastCV:    last,
		watches:   newWatchSet(opts.MaxWatches),
	}
	if opts.NoSync {
		db.writeOpts = pebble.NoSync
	}
	if db.maxGroup <= 0 || db.maxGroup > 1<<16 {
		db.maxGroup = 1024
	}
	db.live.snaps = map[*sharedSnap]struct{}{}
	db.mu.snap, db.mu.version = db.newSharedSnap(pdb.NewSnapshot(), last), last
	go db.commitLoop()
	return db, nil
}

func readLastVersion(pdb *pebble.DB) (int64, error) {
	v, closer, err := pdb.Get(versionKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: read version: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("embedded: stored version is %d bytes, want 8: store is corrupt", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// CreateTransaction implements udb.Database.
func (db *DB) CreateTransaction() (udb.Transaction, error) {
	db.mu.Lock()
	closed := db.mu.closed
	db.mu.Unlock()
	if closed {
		return nil, errors.New("embedded: database is closed")
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

// AdvanceVersions implements udb.Clock.
func (db *DB) AdvanceVersions(n int64) { db.clock.advanced.Add(n) }

// InjectCommitError implements udb.FaultInjector: the next commit fails with
// code, after being applied if applied is true.
func (db *DB) InjectCommitError(code int, applied bool) {
	db.inject.Lock()
	db.inject.code, db.inject.applied = code, applied
	db.inject.Unlock()
}

// Close stops the committer, fails outstanding watches and closes the store.
// Transactions still open fail afterwards.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.mu.closed {
		db.mu.Unlock()
		return nil
	}
	db.mu.closed = true
	db.mu.Unlock()
	close(db.stop)
	<-db.stopped
	db.watches.failAll(udb.Error{Code: udb.CodeOperationCancelled})
	db.mu.Lock()
	db.mu.snap, db.mu.recent = nil, nil
	db.mu.Unlock()
	db.open.Lock()
	db.open.closed = true
	db.live.Lock()
	snaps := make([]*sharedSnap, 0, len(db.live.snaps))
	for s := range db.live.snaps {
		snaps = append(snaps, s)
	}
	db.live.Unlock()
	for _, s := range snaps {
		s.close()
	}
	db.open.Unlock()
	return db.pdb.Close()
}

// readVersion hands out the newest read version with its snapshot. With no
// commit in flight the version moves up to the clock, as FoundationDB's
// versions advance with time, so idle databases do not age transactions.
func (db *DB) readVersion() (*snapHandle, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed {
		return nil, errors.New("embedded: database is closed")
	}
	if db.mu.inflight == 0 {
		db.mu.version = max(db.mu.version, db.clock.now())
	}
	s := db.mu.snap
	s.refs.Add(1)
	return &snapHandle{db: db, shared: s, version: db.mu.version}, nil
}

// snapshotAt serves a read version chosen by the caller, from the newest
// snapshot or a recent one still held by other transactions.
func (db *DB) snapshotAt(v int64) (*snapHandle, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed {
		return nil, errors.New("embedded: database is closed")
	}
	newest := db.mu.version
	if db.mu.inflight == 0 {
		newest = max(newest, db.clock.now())
	}
	if v > newest {
		return nil, udb.Error{Code: udb.CodeFutureVersion}
	}
	if db.clock.now()-v > udb.MVCCWindowVersions {
		return nil, udb.Error{Code: udb.CodeTransactionTooOld}
	}
	if s := db.mu.snap; v >= s.from {
		db.mu.version = max(db.mu.version, v)
		s.refs.Add(1)
		return &snapHandle{db: db, shared: s, version: v}, nil
	}
	for _, s := range db.mu.recent {
		if v >= s.from && v < s.to.Load() {
			s.refs.Add(1) // the DB holds a reference on every recent snapshot
			return &snapHandle{db: db, shared: s, version: v}, nil
		}
	}
	return nil, udb.Error{Code: udb.CodeTransactionTooOld}
}

// recentSnapshots bounds the superseded snapshots kept for SetReadVersion:
// a version set by hand is served if its commit group is among the last
// recentSnapshots ones (or a transaction still reads at it) and inside the
// MVCC window. Each kept snapshot pins old values in pebble, hence the bound.
const recentSnapshots = 128

// publish makes the state after a commit group the newest read version.
func (db *DB) publish(ps *pebble.Snapshot, version int64) {
	s := db.newSharedSnap(ps, version)
	db.mu.Lock()
	old := db.mu.snap
	old.to.Store(version)
	db.mu.snap = s
	db.mu.version = max(db.mu.version, version)
	// The DB's reference on old moves to the recent list.
	recent := append(db.mu.recent, old)
	var evict []*sharedSnap
	now := db.clock.now()
	for len(recent) > 0 && (len(recent) > recentSnapshots || now-recent[0].to.Load() > udb.MVCCWindowVersions) {
		evict = append(evict, recent[0])
		recent = recent[1:]
	}
	db.mu.recent = recent
	db.mu.Unlock()
	for _, r := range evict {
		r.release()
	}
}

// backend adapts DB to txn.Backend.
type backend struct{ db *DB }

func (b backend) ReadVersion(ctx context.Context) (txn.Snapshot, error) {
	return b.db.readVersion()
}

func (b backend) SnapshotAt(ctx context.Context, v int64) (txn.Snapshot, error) {
	return b.db.snapshotAt(v)
}

func (b backend) Commit(ctx context.Context, req *txn.CommitRequest) (txn.CommitResult, error) {
	return b.db.commit(ctx, req)
}

func (b backend) ArmWatches(ws []*txn.Watch) {
	if len(ws) == 0 {
		return
	}
	b.db.armWatches(ws)
}

func (b backend) DisarmWatch(w *txn.Watch) { b.db.watches.remove(w) }

// quietLogger keeps pebble's informational chatter out of berth's logs and
// passes its errors to slog.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	slog.Error("pebble: "+fmt.Sprintf(format, args...), "component", "udb/embedded")
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
