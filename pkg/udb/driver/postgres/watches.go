package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/jackc/pgx/v5"
)

// watchPoll is how often armed watches are checked even without a
// notification: only a safety net, since a check also follows every
// (re)connection of the listener.
const watchPoll = time.Second

// watcher holds this process's armed watches. One goroutine, started with
// the first watch and stopped by Close, listens on notifyChannel with a
// connection of its own and, after every notification (every commit of any
// process), reads the newest values of the watched keys and fires the
// watches whose value differs from the one their transaction saw.
type watcher struct {
	db  *DB
	max int

	mu struct {
		sync.Mutex
		byKey   map[string][]*txn.Watch
		count   int
		started bool
		stopped bool
		// interrupt ends the loop's current wait, so a new watch is
		// checked at once; nil while the loop is not waiting.
		interrupt context.CancelFunc
		kick      bool // a check was asked for since the last one began
	}
	done chan struct{} // closed when the loop ends
}

func newWatcher(db *DB, max int) *watcher {
	if max <= 0 {
		max = udb.DefaultMaxWatches
	}
	w := &watcher{db: db, max: max, done: make(chan struct{})}
	w.mu.byKey = map[string][]*txn.Watch{}
	return w
}

// arm registers the watches of a committed transaction; the loop then
// checks them, firing those whose value already differs.
func (w *watcher) arm(ws []*txn.Watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range ws {
		if !x.MarkArmed() {
			continue
		}
		if w.mu.stopped {
			x.Fire(udb.Error{Code: udb.CodeOperationCancelled})
			continue
		}
		if w.mu.count >= w.max {
			x.Fire(udb.Error{Code: udb.CodeTooManyWatches})
			continue
		}
		w.mu.byKey[string(x.Key)] = append(w.mu.byKey[string(x.Key)], x)
		w.mu.count++
	}
	if w.mu.stopped || w.mu.count == 0 {
		return
	}
	w.mu.kick = true
	if w.mu.interrupt != nil {
		w.mu.interrupt()
	}
	if !w.mu.started {
		w.mu.started = true
		go w.loop()
	}
}

func (w *watcher) remove(x *txn.Watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(x)
}

func (w *watcher) removeLocked(x *txn.Watch) {
	ws := w.mu.byKey[string(x.Key)]
	for i, y := range ws {
		if y == x {
			ws = append(ws[:i], ws[i+1:]...)
			w.mu.count--
			break
		}
	}
	if len(ws) == 0 {
		delete(w.mu.byKey, string(x.Key))
	} else {
		w.mu.byKey[string(x.Key)] = ws
	}
}

// stop ends the loop (the DB's context is already cancelled) and fails the
// watches still armed.
func (w *watcher) stop() {
	w.mu.Lock()
	w.mu.stopped = true
	started := w.mu.started
	for k, ws := range w.mu.byKey {
		for _, x := range ws {
			x.Fire(udb.Error{Code: udb.CodeOperationCancelled})
		}
		delete(w.mu.byKey, k)
	}
	w.mu.count = 0
	w.mu.Unlock()
	if started {
		<-w.done
	}
}

func (w *watcher) loop() {
	defer close(w.done)
	ctx := w.db.ctx
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = w.listen(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("udb watches: cannot listen for commits; polling", "component", "udb/postgres", "err", err)
			}
		}
		w.mu.Lock()
		w.mu.kick = false
		w.mu.Unlock()
		if err := w.check(ctx, conn); err != nil && connBroken(err) && conn != nil {
			closeConn(conn)
			conn = nil
		}
		wait, cancel := context.WithTimeout(ctx, watchPoll)
		w.mu.Lock()
		kicked := w.mu.kick
		w.mu.interrupt = cancel
		w.mu.Unlock()
		if !kicked {
			if conn != nil {
				_, err := conn.WaitForNotification(wait)
				if err != nil && wait.Err() == nil {
					closeConn(conn) // the connection failed, not the wait
					conn = nil
				}
			} else {
				<-wait.Done()
			}
		}
		w.mu.Lock()
		w.mu.interrupt = nil
		w.mu.Unlock()
		cancel()
	}
}

// listen opens the loop's connection and subscribes to commits.
func (w *watcher) listen(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, w.db.pool.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		closeConn(c)
		return nil, err
	}
	return c, nil
}

// check reads the newest value of every watched key, through conn or, when
// the loop has none, a pooled connection, and fires the watches it changed.
func (w *watcher) check(ctx context.Context, conn *pgx.Conn) error {
	w.mu.Lock()
	keys := make([][]byte, 0, len(w.mu.byKey))
	for k := range w.mu.byKey {
		keys = append(keys, []byte(k))
	}
	w.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	values := map[string][]byte{}
	read := func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, newestSQL, keys)
		if err != nil {
			return err
		}
		defer rows.Close()
		return scanNewest(rows, values)
	}
	var err error
	if conn != nil {
		err = read(conn)
	} else {
		err = w.db.pool.withConn(ctx, read)
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, errPoolClosed) {
			slog.Warn("udb watches: reading watched keys", "component", "udb/postgres", "err", err)
		}
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		v, present := values[string(k)]
		for _, x := range append([]*txn.Watch(nil), w.mu.byKey[string(k)]...) {
			if x.Differs(v, present) {
				x.Fire(nil)
				w.removeLocked(x)
			}
		}
	}
	return nil
}
