package wsconn

import (
	"context"
	"crypto/rand"
	"sync"
)

// Inbox is the receiving side of one request tunnelled over a host's socket (a runner's or
// an envoy's): the host's messages for it, bounded, read by the gateway. A reader that
// falls the whole bound behind loses the tunnel (Deliver closes it). Safe for concurrent
// use; Close is idempotent.
//
// The queue is a slice that grows with what is waiting rather than a channel of the whole
// bound: most tunnels carry one or two messages (an HTTP response), and a channel of 1,024
// interface values was a zeroed 16 KiB allocation per request, the gateway's largest.
type Inbox[M any] struct {
	mu     sync.Mutex
	queue  []M // queue[head:] are delivered, not yet received
	head   int
	limit  int
	ready  chan struct{} // holds a token while queue may be non-empty
	closed chan struct{}

	closeOnce sync.Once
	onClose   func()
}

// NewInbox returns an inbox of size messages; onClose (may be nil) runs once, at Close.
func NewInbox[M any](size int, onClose func()) *Inbox[M] {
	return &Inbox[M]{limit: size, ready: make(chan struct{}, 1), closed: make(chan struct{}), onClose: onClose}
}

// Recv returns the next message: those already delivered first, then closedErr once the
// inbox is closed, or ctx's error.
func (b *Inbox[M]) Recv(ctx context.Context, closedErr error) (M, error) {
	for {
		if m, ok := b.pop(); ok {
			return m, nil
		}
		select {
		case <-b.ready:
		case <-b.closed:
			if m, ok := b.pop(); ok {
				return m, nil
			}
			var zero M
			return zero, closedErr
		case <-ctx.Done():
			var zero M
			return zero, ctx.Err()
		}
	}
}

// pop takes the oldest waiting message.
func (b *Inbox[M]) pop() (M, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var zero M
	if b.head == len(b.queue) {
		return zero, false
	}
	m := b.queue[b.head]
	b.queue[b.head] = zero // drop the reference
	b.head++
	if b.head == len(b.queue) {
		b.queue, b.head = b.queue[:0], 0 // empty: the array is reused from its start
	}
	return m, true
}

// Deliver queues m for the reader, or closes the inbox when the reader fell too far behind.
// Messages delivered after Close are dropped.
func (b *Inbox[M]) Deliver(m M) {
	select {
	case <-b.closed:
		return
	default:
	}
	b.mu.Lock()
	if len(b.queue)-b.head >= b.limit {
		b.mu.Unlock()
		b.Close()
		return
	}
	b.queue = append(b.queue, m)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default: // a token is there already
	}
}

// Close ends the inbox: later messages are dropped; Recv returns what was delivered before,
// then its closed error.
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
