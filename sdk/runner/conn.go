package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/sdk/client"
	envoyproto "github.com/berthhq/berth/sdk/protocol/envoy"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// conn is one socket to the engine. The supervisor's connectOnce owns it: it runs the reader
// and waits for the writer.
type conn struct {
	r  *Runner
	ws *websocket.Conn

	ended   chan struct{} // closed when the reader has ended; stops the writer
	closing atomic.Bool   // the runner is closing the socket: its end is not an error

	wake  chan struct{} // capacity 1: the outbox has messages
	outMu sync.Mutex
	out   []outMsg // written in order by the writer
	shut  bool     // a close is queued: later messages are dropped
}

// outMsg is a message to write, or (close) the request to close with 1000
// pegboard.runner_shutdown once everything before it is written.
type outMsg struct {
	msg   proto.ToServer
	envoy envoyproto.ToRivet // an envoy-only message (request-body window updates), msg nil
	close bool
}

// connectOnce dials, completes the handshake and serves the socket until it ends. initialised
// says whether the engine answered ToServerInit; err is why the socket ended (nil when the
// runner closed it).
func (r *Runner) connectOnce() (initialised bool, err error) {
	hctx, cancel := context.WithTimeout(r.life, r.cfg.HandshakeTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(hctx, r.url, &websocket.DialOptions{HTTPClient: r.hc, Subprotocols: r.protocols})
	if err != nil {
		return false, r.dialError(hctx, resp, err)
	}
	ws.SetReadLimit(maxFrame)
	c := &conn{r: r, ws: ws, ended: make(chan struct{}), wake: make(chan struct{}, 1)}
	init, err := c.handshake(hctx)
	cancel()
	if err != nil {
		_ = ws.CloseNow()
		return false, err
	}
	if !r.goLive(c, init) {
		// Shutdown came during the handshake.
		_ = ws.Close(websocket.StatusNormalClosure, reasonShutdown)
		return false, nil
	}
	err = c.serve()
	r.goOffline(c)
	return true, err
}

// dialError explains a failed dial: a *HandshakeError for an HTTP answer, ErrStopped when
// the runner is stopping.
func (r *Runner) dialError(ctx context.Context, resp *http.Response, err error) error {
	switch {
	case r.life.Err() != nil:
		return ErrStopped
	case resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		he := &HandshakeError{Status: resp.StatusCode, cause: err}
		if resp.Body != nil { // the library keeps at most 1 KiB of it
			var ae *client.APIError
			if errors.As(client.DecodeError(resp), &ae) && ae.Group != "" {
				he.Err = ae
			}
		}
		return he
	case ctx.Err() != nil:
		return fmt.Errorf("runner: connect: no answer within %s: %w", r.cfg.HandshakeTimeout, err)
	}
	return fmt.Errorf("runner: connect: %w", err)
}

// handshake sends ToServerInit and reads ToClientInit, which must be the first frame.
func (c *conn) handshake(ctx context.Context) (proto.ToClientInit, error) {
	fail := func(err error) (proto.ToClientInit, error) {
		switch {
		case c.r.life.Err() != nil:
			return proto.ToClientInit{}, ErrStopped
		case ctx.Err() != nil:
			return proto.ToClientInit{}, fmt.Errorf("runner: no ToClientInit within %s: %w", c.r.cfg.HandshakeTimeout, err)
		}
		return proto.ToClientInit{}, socketError(err)
	}
	w := c.r.wire
	if w.initFirst() {
		if err := c.ws.Write(ctx, websocket.MessageBinary, c.r.initFrame); err != nil {
			return fail(err)
		}
	}
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return fail(err)
	}
	if typ != websocket.MessageBinary {
		return proto.ToClientInit{}, &ProtocolError{"the engine's first frame is not binary"}
	}
	init, err := w.decodeInit(b)
	if err != nil {
		return proto.ToClientInit{}, err
	}
	if !w.initFirst() {
		if err := c.ws.Write(ctx, websocket.MessageBinary, c.r.initFrame); err != nil {
			return fail(err)
		}
	}
	if init.RunnerID == "" {
		return proto.ToClientInit{}, &ProtocolError{"ToClientInit has an empty runner id"}
	}
	return init, nil
}

// socketError turns the engine's close frame into a *CloseError.
func socketError(err error) error {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return parseCloseReason(int(ce.Code), ce.Reason)
	}
	return fmt.Errorf("runner: socket: %w", err)
}

// serve runs the writer and reads until the socket ends.
func (c *conn) serve() error {
	var wg sync.WaitGroup
	wg.Go(c.writeLoop)
	err := c.readLoop()
	close(c.ended)
	wg.Wait()
	_ = c.ws.CloseNow() // already closed in every way the reader ends; releases it if not
	return err
}

// readLoop handles frames until the socket ends. A socket silent for PingTimeout is
// dropped: the engine pings every 3 s.
func (c *conn) readLoop() error {
	r := c.r
	for {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PingTimeout)
		typ, b, err := c.ws.Read(ctx)
		silent := ctx.Err() != nil
		cancel()
		switch {
		case err == nil:
		case c.closing.Load():
			return nil
		case silent:
			return fmt.Errorf("runner: nothing from the engine for %s: %w", r.cfg.PingTimeout, err)
		default:
			return socketError(err)
		}
		if typ != websocket.MessageBinary {
			r.log.Warn("runner: ignoring a text frame from the engine")
			continue
		}
		m, err := r.wire.decode(b)
		if err != nil {
			// As the reference client: report and go on. Closing would not help, the engine
			// would send the same frame again.
			r.log.Error("runner: ignoring a frame that does not decode", "error", err, "bytes", len(b))
			continue
		}
		switch m := m.(type) {
		case nil:
			// Nothing for the runner (wire.go).
		case proto.ToClientPing:
			c.send(proto.ToServerPong{Ts: m.Ts})
		case proto.ToClientCommands:
			r.commands(m)
		case proto.ToClientAckEvents:
			r.ackEvents(m)
		case proto.ToClientKvResponse:
			r.kvResponse(m)
		case proto.ToClientTunnelMessage:
			r.tunnelMessage(m)
		case proto.ToClientInit:
			r.log.Warn("runner: ignoring a second ToClientInit on the same socket", "runner_id", m.RunnerID)
		default:
			r.log.Debug("runner: ignoring a message", "type", fmt.Sprintf("%T", m))
		}
	}
}

// writeLoop writes the outbox in order, and the command acknowledgements every
// CommandAckInterval, until the socket ends or closes.
func (c *conn) writeLoop() {
	ack := time.NewTicker(c.r.cfg.CommandAckInterval)
	defer ack.Stop()
	for {
		select {
		case <-c.ended:
			return
		case <-c.wake:
		case <-ack.C:
			if cps := c.r.takeCommandAcks(); len(cps) > 0 {
				c.send(proto.ToServerAckCommands{LastCommandCheckpoints: cps})
			}
			continue
		}
		c.outMu.Lock()
		q := c.out
		c.out = nil
		c.outMu.Unlock()
		for _, m := range q {
			if m.close {
				c.closing.Store(true)
				_ = c.ws.Close(websocket.StatusNormalClosure, reasonShutdown)
				return
			}
			write := c.write
			if m.envoy != nil {
				write = func(proto.ToServer) error { return c.writeEnvoy(m.envoy) }
			}
			if err := write(m.msg); err != nil {
				c.r.log.Warn("runner: write failed; dropping the socket", "error", err)
				_ = c.ws.CloseNow()
				return
			}
		}
	}
}

func (c *conn) write(m proto.ToServer) error {
	b, err := c.r.wire.encode(m)
	if err != nil {
		// SendEvents checked the events; nothing else the runner sends can fail to encode.
		c.r.log.Error("runner: cannot encode a message; skipped", "type", fmt.Sprintf("%T", m), "error", err)
		return nil
	}
	if b == nil {
		return nil // nothing the engine takes on this wire
	}
	// A write whose context ends closes the socket, which is what a stuck write deserves.
	ctx, cancel := context.WithTimeout(context.Background(), c.r.cfg.PingTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

// writeEnvoy writes an envoy-only message (only an envoy's socket queues them).
func (c *conn) writeEnvoy(m envoyproto.ToRivet) error {
	b, err := envoyproto.EncodeToRivet(m, envoyVersion)
	if err != nil {
		c.r.log.Error("runner: cannot encode a message; skipped", "type", fmt.Sprintf("%T", m), "error", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.r.cfg.PingTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

// send queues m for the writer.
func (c *conn) send(m proto.ToServer) { c.push(outMsg{msg: m}) }

// requestClose queues the close with 1000 pegboard.runner_shutdown after what is queued.
func (c *conn) requestClose() { c.push(outMsg{close: true}) }

// drop closes the socket at once, without a close handshake.
func (c *conn) drop() {
	c.closing.Store(true)
	_ = c.ws.CloseNow()
}

func (c *conn) push(m outMsg) {
	c.outMu.Lock()
	if !c.shut {
		c.out = append(c.out, m)
		c.shut = m.close
	}
	c.outMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
