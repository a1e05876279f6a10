package hostsock

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// evicted is the close error of a socket a newer one replaced, or whose host stopped.
var evicted = rerr.WSEviction()

// conn is one host socket.
type conn struct {
	// Static after construction.
	s   *Server
	p   protocol
	ws  *websocket.Conn
	ray string
	t   Timing

	// Set by the handshake, then static.
	version int
	host    actor.Host // set once the host is registered in the store
	pool    actor.Pool // the host's pool, whose queue may move when it connects
	connID  id.ID
	epoch   int64 // of the ownership record; 0 while none is claimed

	closeOnce sync.Once
	done      chan struct{} // closed by the first close
	evicted   bool          // set before done closes: replaced or stopped, not failed

	pongMu   sync.Mutex
	lastPong time.Time // guarded by pongMu
	hb       wsconn.Heartbeat

	// cmds holds commands until the host's stored ones are replayed.
	cmds wsconn.CommandGate[actor.Command, actor.Checkpoint]

	open wsconn.OpenSet[*Tunnel] // this socket's tunnels, closed with it

	acks ackQueue // acknowledged commands not yet cleared in the store
}

func newConn(s *Server, p protocol, ws *websocket.Conn, ray string) *conn {
	c := &conn{s: s, p: p, ws: ws, ray: ray, done: make(chan struct{}), t: s.o.Runner}
	if p.info().kind == kindEnvoy {
		c.t = s.o.Envoy
	}
	c.cmds = wsconn.CommandGate[actor.Command, actor.Checkpoint]{
		Key: func(c actor.Command) actor.Checkpoint { return c.Checkpoint },
		Write: func(cmds []actor.Command) {
			// A failed write fails the socket: the host reconnects and gets them again.
			if c.send(commandsMsg(cmds)) != nil {
				c.fail(nil)
			}
		},
	}
	return c
}

// run serves the socket: the handshake, then its messages until it ends.
func (c *conn) run(r *http.Request) {
	defer func() {
		// Make sure the socket is closed and the reader is released.
		c.fail(nil)
		<-c.done
	}()
	later, err := c.p.handshake(c, r)
	if c.host != (actor.Host{}) {
		defer c.disconnect()
		defer c.acks.flusher.Wait() // before the release: its acknowledgements are committed
		defer c.s.reg.remove(c)
	}
	switch {
	case errors.Is(err, errGone):
		c.fail(nil)
		return
	case err != nil:
		c.fail(err)
		c.drain()
		return
	}
	c.pongMu.Lock()
	c.lastPong = time.Now()
	c.pongMu.Unlock()
	c.hb.Start(c.p.info().firstPing(c.t.PingInterval), c.t.PingInterval, c.ping)
	defer func() {
		c.fail(nil) // a running ping's write ends with the socket
		c.hb.Stop()
	}()
	c.replay()
	if later != nil {
		if err := c.p.handle(c, later); err != nil {
			c.failWith(err)
			return
		}
	}
	c.readLoop()
}

// closeWith closes the socket once with err's code and reason; later calls do nothing.
// evicted says the host was replaced or stopped rather than failed.
func (c *conn) closeWith(err error, evicted bool) {
	c.closeOnce.Do(func() {
		c.evicted = evicted
		close(c.done)
		c.open.CloseAll()
		code := websocket.StatusCode(rerr.CloseCode(err))
		// The handler still holds the WaitGroup here (its last defer comes after the close),
		// so Server.Close also waits for the close handshake.
		c.s.wg.Add(1)
		go func() {
			defer c.s.wg.Done()
			_ = c.ws.Close(code, rerr.CloseReason(err, c.ray))
		}()
	})
}

func (c *conn) fail(err error) { c.closeWith(err, false) }

// failWith ends the socket after a failed read or message: with err's code when it is an
// *rerr.Error (then the peer's close answer is read), else with a plain close.
func (c *conn) failWith(err error) {
	if e, ok := rerr.As(err); ok {
		c.fail(e)
		c.drain()
		return
	}
	c.fail(nil)
}

// drain reads until the close handshake completes, so Close gets the peer's answer.
func (c *conn) drain() {
	for {
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// readFrame reads one message of at most MaxMessage bytes; a longer one is ws.invalid_packet.
func (c *conn) readFrame() (websocket.MessageType, []byte, error) {
	typ, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxMessage+1))
	if err != nil {
		return 0, nil, err
	}
	if len(b) > MaxMessage {
		return 0, nil, rerr.WSInvalidPacket().WithCause(errors.New("payload too large"))
	}
	return typ, b, nil
}

// readInit reads the host's first message within InitTimeout: a binary frame, else
// ws.invalid_initial_packet; none in time is ws.timed_out_waiting_for_init.
func (c *conn) readInit() ([]byte, error) {
	type frame struct {
		typ  websocket.MessageType
		data []byte
		err  error
	}
	got := make(chan frame, 1)
	go func() {
		typ, b, err := c.readFrame()
		got <- frame{typ, b, err}
	}()
	t := time.NewTimer(c.s.o.InitTimeout)
	defer t.Stop()
	select {
	case f := <-got:
		switch {
		case f.err != nil:
			return nil, f.err
		case f.typ != websocket.MessageBinary:
			return nil, rerr.WSInvalidInitialPacket()
		}
		return f.data, nil
	case <-t.C:
		c.fail(rerr.WSTimedOutWaitingForInit())
		<-got // the reader ends with the close handshake
		return nil, rerr.WSTimedOutWaitingForInit()
	case <-c.s.ctx.Done():
		c.fail(rerr.WSGoingAway())
		<-got
		return nil, rerr.WSGoingAway()
	}
}

// readLoop handles frames until the socket ends or a frame is invalid.
func (c *conn) readLoop() {
	for {
		typ, b, err := c.readFrame()
		if err != nil {
			c.failWith(err)
			return
		}
		if typ != websocket.MessageBinary {
			continue // Rivet ignores non-binary frames after init
		}
		if err := c.p.handle(c, b); err != nil {
			c.failWith(err)
			return
		}
	}
}

// send encodes m for the host's protocol and writes it. A socket that takes no write for
// PingTimeout is as dead as one that does not pong.
func (c *conn) send(m toHost) error {
	b, err := c.p.encode(c, m)
	if err != nil {
		return rerr.Internal(err)
	}
	if b == nil {
		return nil // nothing the protocol carries
	}
	return c.write(b)
}

// write writes one binary frame. Not the server's context: a write whose context ends
// closes the connection without a close frame.
func (c *conn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.t.PingTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

// reply sends m; a failed write ends the socket.
func (c *conn) reply(m toHost) {
	if err := c.send(m); err != nil {
		c.fail(nil)
	}
}

// storeErr maps a failed store call of the handshake: ws.going_away while the server
// closes; rerr errors as they are; anything else is logged and internal.
func (c *conn) storeErr(what string, err error) error {
	if c.s.ctx.Err() != nil {
		return rerr.WSGoingAway()
	}
	if _, ok := rerr.As(err); !ok {
		c.s.o.Log.Error(c.p.info().kind+" socket: "+what, c.logAttrs("error", err)...)
		return rerr.Internal(err)
	}
	return err
}

// logAttrs are the socket's log attributes, then more.
func (c *conn) logAttrs(more ...any) []any {
	return append([]any{"host", c.host.String(), "ray_id", c.ray}, more...)
}

// register makes the socket of host h, registered in the store under c.connID (prev:
// the socket it replaced there, if any), live: it is added to the registry, its ownership
// record is claimed, and the socket it replaced is evicted, wherever it is.
func (c *conn) register(h actor.Host, prev id.ID) error {
	c.host = h
	if !c.s.reg.add(c) {
		return rerr.WSGoingAway()
	}
	epoch, err := c.s.o.Cluster.ClaimSocket(c.s.ctx, h)
	if err != nil {
		return c.storeErr("claim ownership", err)
	}
	c.epoch = epoch
	if !prev.IsZero() {
		c.s.o.Cluster.Evict(prev)
	}
	return nil
}

// disconnect records the end of the socket (protocol.release) once it closed: with the
// release of its ownership record, in one bounded (batched) transaction, or alone when none
// was claimed.
func (c *conn) disconnect() {
	<-c.done
	release := func(ctx context.Context, tx udb.Transaction) error { return c.p.release(ctx, tx, c) }
	if c.epoch != 0 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 20*time.Second)
		defer cancel()
		c.s.o.Cluster.ReleaseSocket(ctx, c.host, c.epoch, release)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 10*time.Second)
	defer cancel()
	err := udb.Update(ctx, c.s.o.DB, func(tx udb.Transaction) error { return release(ctx, tx) })
	if _, ok := rerr.As(err); err != nil && !ok {
		c.s.o.Log.Warn(c.p.info().kind+" socket: disconnect", c.logAttrs("error", err)...)
	}
}

// stale reports a host error saying a newer socket took the host over.
func stale(err error) bool {
	c := rerr.CodeOf(err)
	return c == rerr.CodeRunnerStaleConnection || c == rerr.CodeEnvoyStaleConnection
}

// errGone ends a handshake whose write failed: the socket is closed without a reason.
var errGone = errors.New("hostsock: the socket is gone")
