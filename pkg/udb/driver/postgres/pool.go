package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pool is a small bounded pool of connections. A connection goes back idle
// only if it is healthy and outside any transaction; anything else is closed.
type pool struct {
	cfg   *pgx.ConnConfig
	slots chan struct{} // one token per connection that may be open

	mu struct {
		sync.Mutex
		idle   []*pgx.Conn
		closed bool
	}
}

var errPoolClosed = errors.New("postgres: database is closed")

func newPool(cfg *pgx.ConnConfig, size int) *pool {
	return &pool{cfg: cfg, slots: make(chan struct{}, size)}
}

// acquire returns an idle connection or dials a new one once a slot is free.
func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, errPoolClosed
	}
	if n := len(p.mu.idle); n > 0 {
		c := p.mu.idle[n-1]
		p.mu.idle = p.mu.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return c, nil
}

// release returns c; failed reports an error whose effect on the
// connection is unknown, in which case it is closed.
func (p *pool) release(c *pgx.Conn, failed bool) {
	defer func() { <-p.slots }()
	if !failed && !c.IsClosed() && c.PgConn().TxStatus() == 'I' {
		p.mu.Lock()
		if !p.mu.closed {
			p.mu.idle = append(p.mu.idle, c)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	closeConn(c)
}

// close closes the idle connections; busy ones close when released.
func (p *pool) close() {
	p.mu.Lock()
	p.mu.closed = true
	idle := p.mu.idle
	p.mu.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		closeConn(c)
	}
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// connBroken reports whether err may have left the connection mid-protocol:
// anything but an error reported by the server.
func connBroken(err error) bool {
	var pgErr *pgconn.PgError
	return err != nil && !errors.As(err, &pgErr)
}

// withConn runs f on a pooled connection.
func (p *pool) withConn(ctx context.Context, f func(c *pgx.Conn) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	err = f(c)
	p.release(c, connBroken(err))
	return err
}
