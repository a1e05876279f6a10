package wsconn

import (
	"context"
	"crypto/rand"
	"sync"
)

// Inbox is the receiving side of one request tunnelled over a host's socket (a runner's or
// an envoy's): the host's messages for it, bounded, read by the gateway. A reader that
// falls the whole buffer behind loses the tunnel (Deliver closes it). Safe for concurrent
// use; Close is idempotent.
type Inbox[M any] struct {
	in        chan M
	closeOnce sync.Once
	closed    chan struct{}
	onClose   func()
}

// NewInbox returns an inbox of size messages; onClose (may be nil) runs once, at Close.
func NewInbox[M any](size int, onClose func()) *Inbox[M] {
	return &Inbox[M]{in: make(chan M, size), closed: make(chan struct{}), onClose: onClose}
}

// Recv returns the next message: those already delivered first, then closedErr once the
// inbox is closed, or ctx's error.
func (b *Inbox[M]) Recv(ctx context.Context, closedErr error) (M, error) {
	select {
	case m := <-b.in:
		return m, nil
	default:
	}
	var zero M
	select {
	case m := <-b.in:
		return m, nil
	case <-b.closed:
		return zero, closedErr
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Deliver queues m for the reader, or closes the inbox when the reader fell too far behind.
func (b *Inbox[M]) Deliver(m M) {
	select {
	case b.in <- m:
	default:
		b.Close()
	}
}

// Close ends the inbox: later messages are dropped, Recv returns its closed error.
func (b *Inbox[M]) Close() {
	b.closeOnce.Do(func() {
		close(b.closed)
		if b.onClose != nil {
			b.onClose()
		}
	})
}

// Done is closed once the inbox is closed.
func (b *Inbox[M]) Done() <-chan struct{} { return b.closed }

// NewRequestID draws a random 4-byte request id that taken reports free; the caller holds
// whatever lock guards taken's set.
func NewRequestID(taken func([4]byte) bool) [4]byte {
	var id [4]byte
	for {
		_, _ = rand.Read(id[:])
		if !taken(id) {
			return id
		}
	}
}
