package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/jackc/pgx/v5"
)

// snapshot is one transaction's view: the rows at or below its version. It
// holds no connection; every read is one statement that also checks, in the
// same PostgreSQL snapshot, that the history it needs was not pruned.
type snapshot struct {
	db      *DB
	version int64

	// The version's age in versions is age0 plus the time since taken, plus
	// what AdvanceVersions added since.
	taken    time.Time
	age0     int64
	adv0     int64
	released atomic.Bool

	// What the last two closed iterators were asked for, to size the
	// next one's first page; see firstPageSize.
	lastAsked, prevAsked atomic.Int32

	// pages caches pages and point reads at this version: the rows visible
	// at a version never change, and transactions often read a range again
	// (the transaction layer rereads what it resolved selectors over), as do
	// the creates that share one transaction (engine/pegboard/batch.go),
	// which each read the same configuration keys; Prefetch fills it ahead.
	pages struct {
		sync.Mutex
		byRange map[string]cachedPage // by pageKey
		byKey   map[string][]byte     // nil: absent
		bytes   int
	}
}

// cachedPage is the first rows of a range in the iteration order, and whether they are
// all of it.
type cachedPage struct {
	rows     []udb.KeyValue
	complete bool
}

var (
	_ txn.Snapshot   = (*snapshot)(nil)
	_ txn.Prefetcher = (*snapshot)(nil)
)

func (db *DB) newSnapshot(version, now int64) *snapshot {
	return &snapshot{db: db, version: version, taken: time.Now(), age0: max(0, now-version), adv0: db.advanced.Load()}
}

func (s *snapshot) Version() int64 { return s.version }

func (s *snapshot) Release() {
	s.released.Store(true)
	s.pages.Lock()
	s.pages.byRange, s.pages.byKey, s.pages.bytes = nil, nil, 0
	s.pages.Unlock()
}

// pageCacheBytes bounds the pages a snapshot keeps.
const pageCacheBytes = 4 << 20

func pageKey(lo, hi []byte, reverse bool) string {
	b := binary.AppendUvarint(nil, uint64(len(lo)))
	b = append(b, lo...)
	b = append(b, hi...)
	if reverse {
		b = append(b, 1)
	}
	return string(b)
}

// servedRows is how many rows of a cached page an iterator is given when it asks for
// fewer: they cost no round trip, and an iterator whose first page was sized small (see
// firstPageSize) would otherwise read the rest of a page cached whole (Prefetch's) in
// pages of its own, under other cache keys.
const servedRows = prefetchRows

// cachedRows returns the first rows of [lo, hi) in the iteration order, if a page read
// before holds at least n of them (or all), and whether more may follow them: n rows, or up
// to servedRows when n is fewer.
func (s *snapshot) cachedRows(lo, hi []byte, reverse bool, n int) (rows []udb.KeyValue, more, ok bool) {
	s.pages.Lock()
	defer s.pages.Unlock()
	p, ok := s.pages.byRange[pageKey(lo, hi, reverse)]
	switch {
	case !ok || len(p.rows) < n && !p.complete:
		return nil, false, false // not cached, or too short and more follow
	case len(p.rows) > max(n, servedRows):
		return p.rows[:max(n, servedRows)], true, true
	}
	return p.rows, !p.complete, true
}

// cachePage keeps the first rows of [lo, hi) (all of them when complete), unless a page
// kept before holds as much.
func (s *snapshot) cachePage(lo, hi []byte, reverse bool, rows []udb.KeyValue, complete bool) {
	k := pageKey(lo, hi, reverse)
	size := pageSize(k, rows)
	s.pages.Lock()
	defer s.pages.Unlock()
	old, had := s.pages.byRange[k]
	if had && (old.complete || len(old.rows) >= len(rows)) {
		return
	}
	if had {
		size -= pageSize(k, old.rows)
	}
	if s.released.Load() || s.pages.bytes+size > pageCacheBytes {
		return
	}
	if s.pages.byRange == nil {
		s.pages.byRange = map[string]cachedPage{}
	}
	s.pages.byRange[k] = cachedPage{rows: slices.Clone(rows), complete: complete}
	s.pages.bytes += size
}

func pageSize(k string, rows []udb.KeyValue) int {
	size := len(k)
	for _, kv := range rows {
		size += len(kv.Key) + len(kv.Value) + 48
	}
	return size
}

// cachedValue returns the value of a key read before at this version.
func (s *snapshot) cachedValue(key []byte) (value []byte, ok bool) {
	s.pages.Lock()
	defer s.pages.Unlock()
	value, ok = s.pages.byKey[string(key)]
	return value, ok
}

// cacheValue keeps a point read's value (nil: absent) within the bound.
func (s *snapshot) cacheValue(key, value []byte) {
	size := len(key) + len(value) + 48
	s.pages.Lock()
	defer s.pages.Unlock()
	if s.released.Load() || s.pages.bytes+size > pageCacheBytes {
		return
	}
	if s.pages.byKey == nil {
		s.pages.byKey = map[string][]byte{}
	}
	s.pages.byKey[string(key)] = slices.Clone(value)
	s.pages.bytes += size
}

// live fails reads once the version has left the MVCC window.
func (s *snapshot) live() error {
	if s.released.Load() {
		return udb.Error{Code: udb.CodeTransactionCancelled}
	}
	age := s.age0 + time.Since(s.taken).Microseconds()*(udb.VersionsPerSecond/1_000_000) + s.db.advanced.Load() - s.adv0
	if age > udb.MVCCWindowVersions {
		return udb.Error{Code: udb.CodeTransactionTooOld}
	}
	return nil
}

// pruned reports a read whose history may be gone.
func (s *snapshot) pruned(horizon int64) error {
	if s.version < horizon {
		return udb.Error{Code: udb.CodeTransactionTooOld}
	}
	return nil
}

// query runs a read statement on a pooled connection, bounded by the DB's
// lifetime and queryTimeout.
func (s *snapshot) query(f func(ctx context.Context, c *pgx.Conn) error) error {
	if err := s.live(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.db.ctx, queryTimeout)
	defer cancel()
	if err := s.db.pool.withConn(ctx, func(c *pgx.Conn) error { return f(ctx, c) }); err != nil {
		if s.db.ctx.Err() != nil {
			return errPoolClosed
		}
		return fmt.Errorf("postgres: read: %w", err)
	}
	return nil
}

// A row is visible at version v when version <= v < superseded_at (NULL:
// still the newest), so each key has at most one visible row, the one with
// the highest version at or below v, and none when that row was superseded
// at or below v (a clear) or holds NULL (a clear row of an earlier driver).

// getSQL reads one key at a version: the key's row with the highest version
// at or below it, a single index step however much history the key has. The
// horizon comes from the same PostgreSQL snapshot.
const getSQL = `
SELECT m.horizon, v.value FROM udb_meta m LEFT JOIN LATERAL (
	SELECT CASE WHEN superseded_at IS NULL OR superseded_at > $2 THEN value END AS value FROM udb_kv
	WHERE key = $1 AND version <= $2 ORDER BY version DESC LIMIT 1
) v ON true WHERE m.id = 1`

func (s *snapshot) Get(key []byte) ([]byte, error) {
	if v, ok := s.cachedValue(key); ok {
		if err := s.live(); err != nil {
			return nil, err
		}
		return slices.Clone(v), nil
	}
	var horizon int64
	var value []byte
	err := s.query(func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, getSQL, nonNil(key), s.version).Scan(&horizon, &value)
	})
	if err != nil {
		return nil, err
	}
	if err := s.pruned(horizon); err != nil {
		return nil, err
	}
	value = presentOrNil(value)
	s.cacheValue(key, value)
	return value, nil
}

// presentOrNil is a value read by getSQL: nil when absent, a non-nil empty slice when
// present and empty.
func presentOrNil(value []byte) []byte {
	if value != nil && len(value) == 0 {
		return []byte{}
	}
	return value
}

const (
	// prefetchRows is how many rows of a range Prefetch reads.
	prefetchRows = wantAllPage
	// maxPrefetch bounds the keys and the ranges of one Prefetch; what is beyond it is
	// read when the transaction reads it.
	maxPrefetch = 1024
)

// getManySQL reads the values of the keys in $1 visible at version $2, a row for each key
// in the array's order, each with the horizon: getSQL for many keys in one statement.
const getManySQL = `
SELECT m.horizon, v.value FROM udb_meta m CROSS JOIN unnest($1::bytea[]) WITH ORDINALITY AS k(key, i)
LEFT JOIN LATERAL (
	SELECT CASE WHEN superseded_at IS NULL OR superseded_at > $2 THEN value END AS value FROM udb_kv
	WHERE key = k.key AND version <= $2 ORDER BY version DESC LIMIT 1
) v ON true WHERE m.id = 1 ORDER BY k.i`

// Prefetch reads the keys and ranges not cached yet (up to maxPrefetch of each) in one
// round trip, a pipeline of one statement for all the keys (getManySQL) and the statement
// the iterators use for each range, and caches what they return (a range up to
// prefetchRows rows), so that the transaction's reads of them that follow need none. The
// keys go in one statement because PostgreSQL's work per statement, not per key, is most
// of a point read's (a batch of creates prefetches a few keys for each create).
// Errors are left for those reads to meet: nothing is cached from a failed round trip.
func (s *snapshot) Prefetch(keys [][]byte, ranges []udb.KeyRange) {
	var b pgx.Batch
	var gets [][]byte
	seen := map[string]bool{}
	for _, k := range keys {
		if len(gets) == maxPrefetch {
			break
		}
		if _, ok := s.cachedValue(k); !ok && !seen[string(k)] {
			seen[string(k)] = true
			gets = append(gets, nonNil(k))
		}
	}
	if len(gets) > 0 {
		b.Queue(getManySQL, gets, s.version)
	}
	var pages []udb.KeyRange
	for _, r := range ranges {
		if len(pages) == maxPrefetch {
			break
		}
		if bytes.Compare(r.Begin, r.End) >= 0 {
			continue
		}
		if _, _, ok := s.cachedRows(r.Begin, r.End, false, prefetchRows); !ok {
			pages = append(pages, r)
			b.Queue(pageForwardSQL, nonNil(r.Begin), r.End, s.version, prefetchRows)
		}
	}
	if b.Len() == 0 {
		return
	}
	values := make([][]byte, len(gets))
	rows := make([][]udb.KeyValue, len(pages))
	err := s.query(func(ctx context.Context, c *pgx.Conn) error {
		br := c.SendBatch(ctx, &b)
		defer br.Close()
		if len(gets) > 0 {
			if err := s.scanValues(br, values); err != nil {
				return err
			}
		}
		for i := range pages {
			q, err := br.Query()
			if err != nil {
				return err
			}
			var horizon int64
			if rows[i], horizon, err = scanPage(q, nil); err != nil {
				return err
			}
			if err := s.pruned(horizon); err != nil {
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return
	}
	for i, k := range gets {
		s.cacheValue(k, presentOrNil(values[i]))
	}
	for i, r := range pages {
		s.cachePage(r.Begin, r.End, false, rows[i], len(rows[i]) < prefetchRows)
	}
}

// scanValues reads getManySQL's rows into values, checking each row's horizon.
func (s *snapshot) scanValues(br pgx.BatchResults, values [][]byte) error {
	q, err := br.Query()
	if err != nil {
		return err
	}
	defer q.Close()
	n := 0
	for q.Next() {
		if n == len(values) {
			return fmt.Errorf("postgres: %d values for %d keys", n+1, len(values))
		}
		var horizon int64
		if err := q.Scan(&horizon, &values[n]); err != nil {
			return err
		}
		if err := s.pruned(horizon); err != nil {
			return err
		}
		n++
	}
	if err := q.Err(); err != nil {
		return err
	}
	if n != len(values) {
		return fmt.Errorf("postgres: %d values for %d keys", n, len(values))
	}
	return nil
}

// pageSQL reads up to $4 live keys of [$1, $2) visible at version $3, in
// key order or reverse key order. A visible row is either its key's newest
// (udb_kv_latest) or one superseded after $3 (udb_kv_history), and the page
// merges the two index scans. Walking the primary key instead visits every
// version in the range: where keys come and go (a pool's allocation index,
// whose entries move with every slot taken) a page of two rows read through
// 3,500 superseded ones and 3,000 buffers, 3–15 ms. Every row carries the
// horizon, from the same PostgreSQL snapshot, and an empty page is one row
// without a key, so that one round trip gives both. The horizon only grows,
// so a later one at or below the read version vouches for the earlier
// snapshot too.
func pageSQL(reverse bool) string {
	dir := ""
	if reverse {
		dir = " DESC"
	}
	return `
SELECT r.key IS NOT NULL, r.key, r.value, m.horizon FROM udb_meta m LEFT JOIN LATERAL (
	SELECT key, value FROM (
		(SELECT key, value FROM udb_kv
		WHERE key >= $1 AND key < $2 AND superseded_at IS NULL AND version <= $3 AND value IS NOT NULL
		ORDER BY key` + dir + ` LIMIT $4)
		UNION ALL
		(SELECT key, value FROM udb_kv
		WHERE key >= $1 AND key < $2 AND superseded_at > $3 AND version <= $3 AND value IS NOT NULL
		ORDER BY key` + dir + ` LIMIT $4)
	) u ORDER BY key` + dir + ` LIMIT $4) r ON true
WHERE m.id = 1 ORDER BY r.key` + dir
}

var (
	pageForwardSQL = pageSQL(false)
	pageReverseSQL = pageSQL(true)
)

// Page sizes of a range read. The transaction layer reads a range in
// batches of n rows, each with a new iterator that it asks for n+1 rows (the
// last to learn whether more follow) and then closes; n stays the same or
// doubles from one batch to the next, by streaming mode. So an iterator's
// first page is the next n predicted from the last two, plus one, and with
// no history a small one, since many scans stop early (selectors read one
// key); never more than the n+1 asked for, and at least wantAllPage when
// the whole range is asked for (StreamingModeWantAll: a runner's fields,
// read after a scan that stopped early, took two pages). Later pages of one
// iterator grow, but to about pageBytes judging by the rows read so far.
const (
	firstPage   = 32
	wantAllPage = 64
	maxPage     = 4096
	pageBytes   = 1 << 20
)

func (s *snapshot) NewIter(begin, end []byte, reverse bool, want int) (txn.Iter, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	return &iter{s: s, begin: nonNil(begin), end: end, reverse: reverse, want: want}, nil
}

// estimateSQL sums the sizes of the newest rows of a range, stopping after
// estimateRows of them: an estimate, as FoundationDB's is.
const estimateSQL = `
SELECT coalesce(sum(octet_length(key) + octet_length(value)), 0)::bigint FROM (
	SELECT key, value FROM udb_kv
	WHERE key >= $1 AND key < $2 AND superseded_at IS NULL AND value IS NOT NULL LIMIT 100000
) s`

func (s *snapshot) EstimateSize(begin, end []byte) (int64, error) {
	var n int64
	err := s.query(func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, estimateSQL, nonNil(begin), nonNil(end)).Scan(&n)
	})
	return n, err
}

// iter walks [begin, end) of a snapshot a page at a time.
type iter struct {
	s          *snapshot
	begin, end []byte
	reverse    bool
	want       int // the rows the transaction layer means to read (NewIter)

	page   []udb.KeyValue
	pos    int
	full   bool // the page was as long as asked: more may follow
	size   int  // the next page's size
	rows   int64
	bytes  int64 // rows and bytes read so far, to size pages
	err    error
	handed int // rows handed out
}

// fetch reads the page of [lo, hi) in the iteration order.
func (it *iter) fetch(lo, hi []byte) bool {
	it.page, it.pos, it.full = it.page[:0], 0, false
	if it.err != nil || bytes.Compare(lo, hi) >= 0 {
		return false
	}
	if it.size == 0 {
		it.size = it.s.firstPageSize(it.want)
	}
	n := it.size
	it.size = min(it.size*4, maxPage)
	q := pageForwardSQL
	if it.reverse {
		q = pageReverseSQL
	}
	if it.rows > 0 {
		n = max(1, min(n, int(pageBytes*it.rows/it.bytes)))
	}
	if page, more, ok := it.s.cachedRows(lo, hi, it.reverse, n); ok {
		if err := it.s.live(); err != nil {
			it.err = err
			return false
		}
		it.page = append(it.page, page...)
		it.full = more
		return len(it.page) > 0
	}
	var horizon int64
	err := it.s.query(func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, q, lo, hi, it.s.version, n)
		if err != nil {
			return err
		}
		it.page, horizon, err = scanPage(rows, it.page)
		return err
	})
	if err == nil {
		err = it.s.pruned(horizon)
	}
	if err != nil {
		it.page, it.err = it.page[:0], err
		return false
	}
	for _, kv := range it.page {
		it.rows++
		it.bytes += int64(len(kv.Key) + len(kv.Value) + 16)
	}
	it.full = len(it.page) == n
	it.s.cachePage(lo, hi, it.reverse, it.page, !it.full)
	return len(it.page) > 0
}

// scanPage appends the rows of a page statement (pageSQL) to page, and returns the
// horizon they carry. It closes rows.
func scanPage(rows pgx.Rows, page []udb.KeyValue) ([]udb.KeyValue, int64, error) {
	defer rows.Close()
	var horizon int64
	for rows.Next() {
		var found bool
		var k, v []byte
		if err := rows.Scan(&found, &k, &v, &horizon); err != nil {
			return page, 0, err
		}
		if !found {
			continue // the empty page's row: the horizon only
		}
		if v == nil {
			v = []byte{}
		}
		page = append(page, udb.KeyValue{Key: k, Value: v})
	}
	return page, horizon, rows.Err()
}

// counted counts the rows handed out.
func (it *iter) counted(ok bool) bool {
	if ok {
		it.handed++
	}
	return ok
}

func (it *iter) First() bool { return it.counted(it.fetch(it.begin, it.end)) }

func (it *iter) Next() bool { return it.counted(it.next()) }

func (it *iter) next() bool {
	if it.pos+1 < len(it.page) {
		it.pos++
		return true
	}
	if !it.full || len(it.page) == 0 {
		it.page, it.pos = it.page[:0], 0
		return false
	}
	last := it.page[len(it.page)-1].Key
	if it.reverse {
		return it.fetch(it.begin, last)
	}
	return it.fetch(udb.KeyAfter(last), it.end)
}

func (it *iter) Seek(key []byte) bool {
	if it.reverse {
		hi := it.end
		if bytes.Compare(key, hi) < 0 {
			hi = key
		}
		return it.counted(it.fetch(it.begin, hi))
	}
	lo := it.begin
	if bytes.Compare(key, lo) > 0 {
		lo = key
	}
	return it.counted(it.fetch(lo, it.end))
}

func (it *iter) Key() []byte   { return it.page[it.pos].Key }
func (it *iter) Value() []byte { return it.page[it.pos].Value }
func (it *iter) Err() error    { return it.err }

func (it *iter) Close() error {
	it.s.prevAsked.Store(it.s.lastAsked.Load())
	it.s.lastAsked.Store(int32(min(max(it.handed-1, 1), maxPage)))
	return nil
}

// firstPageSize is the first page of an iterator asked for want rows (see
// the page sizes above).
func (s *snapshot) firstPageSize(want int) int {
	n := s.predictedPage()
	if want >= maxPage {
		return max(n, wantAllPage)
	}
	return min(n, want+1)
}

// predictedPage predicts the rows the next iterator is asked for.
func (s *snapshot) predictedPage() int {
	last, prev := int(s.lastAsked.Load()), int(s.prevAsked.Load())
	switch {
	case last == 0:
		return firstPage
	case prev > 0 && last < 2*prev:
		return min(last+1, maxPage) // the same again
	default:
		return min(2*last+1, maxPage) // doubling, or not known yet
	}
}

// nonNil makes an empty key a present bytea: pgx sends a nil slice as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
