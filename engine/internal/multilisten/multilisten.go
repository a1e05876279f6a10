// Package multilisten serves one listener's connections from several addresses, such as the
// IPv4 and IPv6 loopback addresses an engine without an admin token binds.
package multilisten

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Listen listens on every address of addrs (host:port, at least one) and returns one
// listener that accepts from all of them; its Addr is the first address's. A port 0 in the
// first address picks a free port, and the other addresses take the same one. Only the first
// address must succeed: an error on another (no IPv6 on this machine, say) leaves that address
// out, and is returned in skipped.
func Listen(ctx context.Context, addrs []string) (ln net.Listener, skipped []error, err error) {
	if len(addrs) == 0 {
		return nil, nil, errors.New("multilisten: no address")
	}
	var lc net.ListenConfig
	first, err := lc.Listen(ctx, "tcp", addrs[0])
	if err != nil {
		return nil, nil, err
	}
	if len(addrs) == 1 {
		return first, nil, nil
	}
	port := strconv.Itoa(first.Addr().(*net.TCPAddr).Port)
	m := &listener{lns: []net.Listener{first}, conns: make(chan accepted), done: make(chan struct{})}
	for _, a := range addrs[1:] {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", a, err))
			continue
		}
		other, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		m.lns = append(m.lns, other)
	}
	if len(m.lns) == 1 {
		return first, skipped, nil
	}
	for _, l := range m.lns {
		m.wg.Go(func() { m.acceptLoop(l) })
	}
	return m, skipped, nil
}

type accepted struct {
	c   net.Conn
	err error
}

// listener merges the accepts of several listeners.
type listener struct {
	lns   []net.Listener
	conns chan accepted
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// acceptLoop hands l's connections to Accept until l fails or the listener closes; a failure
// is handed on too (net/http's Serve then stops, or retries a temporary one).
func (m *listener) acceptLoop(l net.Listener) {
	for {
		c, err := l.Accept()
		select {
		case m.conns <- accepted{c, err}:
		case <-m.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return
			}
		}
	}
}

func (m *listener) Accept() (net.Conn, error) {
	select {
	case a := <-m.conns:
		return a.c, a.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close closes every address's listener and waits for their accept loops.
func (m *listener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, l := range m.lns {
			err = errors.Join(err, l.Close())
		}
		m.wg.Wait()
	})
	return err
}

// Addr is the first address's.
func (m *listener) Addr() net.Addr { return m.lns[0].Addr() }
