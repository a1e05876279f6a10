package guard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Hibernating WebSockets (docs/protocol.md, "Tunnels and message ids"): when the runner
// accepts a socket with canHibernate, the gateway keeps every client message until the
// actor acknowledges it; when the actor goes to sleep (ToServerWebSocketClose with
// hibernate), the client socket stays open; the next client message wakes the actor, whose
// start restores the socket (hibernatingRequests), and the unacknowledged messages are sent
// again under their own indices, the new ones continuing the sequence. As on Rivet, a
// socket whose actor stops while a client message is still unacknowledged (one the runner
// received as its actor stopped, or after) resumes at once rather than waiting for the
// client's next message, and so does one whose actor is woken by anything else.

// Limits of a hibernatable socket's unacknowledged messages.
const (
	maxPendingBytes    = 128 << 20
	maxPendingCount    = 65535
	hibernateKeepalive = 45 * time.Second

	// stopAckGrace bounds the wait, once the actor stopped, for the acknowledgements its
	// runner sent before the stop (they travel on the tunnel, the stop through the store).
	stopAckGrace = time.Second
)

// resumable reports whether tun and the gateway's tunnels can carry a request across its
// actor's sleep.
func (g *Gateway) resumable(tun Tunnel) bool {
	rt, ok := tun.(ResumableTunnel)
	return ok && rt.Resumable()
}

// ResumableTunnel is a Tunnel that can carry a hibernated request across its actor's sleep
// (when Resumable says so): its messages are numbered here, so that the unacknowledged ones
// are sent again under their own numbers on the actor's next host.
type ResumableTunnel interface {
	Tunnel
	SendIndexed(proto.ToClientTunnelMessageKind) (uint16, error)
	Resend(idx uint16, kind proto.ToClientTunnelMessageKind) error
	RequestID() proto.RequestID
	NextIndex() uint16
	Resumable() bool
}

// session is one client WebSocket tunnelled to an actor.
type session struct {
	g            *Gateway
	client       *websocket.Conn
	actorID      id.ID
	tun          Tunnel
	canHibernate bool

	// mu guards what the client reader (which sends client messages on the tunnel
	// itself while the session relays) shares with the session's loop.
	mu       sync.Mutex
	relaying bool // client messages go to tun directly
	// handled tells the client reader that the loop has dealt with the message it handed
	// over, so that the reader's next message cannot overtake it.
	handled      chan struct{}
	pending      []pendingMessage // sent, not acknowledged (hibernatable only)
	pendingBytes int
}

type pendingMessage struct {
	idx uint16
	msg proto.ToClientWebSocketMessage
}

// clientFrame is what the client reader hands the session's loop: a message it could not
// send itself (the session is not relaying), the client's close or read error (err), or
// the failure to send a message on the tunnel (sendErr).
type clientFrame struct {
	typ     websocket.MessageType
	data    []byte
	err     error
	sendErr error
}

// run relays until either side closes for good. Messages take no goroutine hand-off while
// the session relays: the client reader sends each client message on the tunnel, and the
// tunnel reader writes each actor message to the client; the loop sees the rest.
func (s *session) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	frames := make(chan clientFrame)
	go func() {
		for {
			typ, data, err := s.client.Read(ctx)
			f := clientFrame{typ: typ, data: data, err: err}
			if err == nil {
				sent, err := s.sendDirect(proto.ToClientWebSocketMessage{Data: data, Binary: typ == websocket.MessageBinary})
				if sent && err == nil {
					continue
				}
				if sent {
					f = clientFrame{sendErr: err}
				}
			}
			select {
			case frames <- f:
			case <-ctx.Done():
				return
			}
			if f.err != nil || f.sendErr != nil {
				return
			}
			select {
			case <-s.handled:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		hibernate := s.relay(ctx, frames)
		if !hibernate || !s.hibernate(ctx, frames) {
			return
		}
	}
}

// relay copies messages both ways over the current tunnel. It reports true when the actor
// went to sleep with the socket hibernating; false when the socket is over.
func (s *session) relay(ctx context.Context, frames <-chan clientFrame) bool {
	tun := s.tun // resume replaces s.tun once this relay is over
	tctx, stop := context.WithCancel(ctx)
	fromActor := make(chan proto.ToServerTunnelMessageKind)
	tunErr := make(chan error, 1)
	done := make(chan struct{})
	defer func() {
		stop()
		<-done
	}()
	go func() {
		defer close(done)
		for {
			m, err := tun.Recv(tctx)
			if err != nil {
				tunErr <- err
				return
			}
			if m, ok := m.(proto.ToServerWebSocketMessage); ok {
				typ := websocket.MessageText
				if m.Binary {
					typ = websocket.MessageBinary
				}
				if err := s.client.Write(ctx, typ, m.Data); err != nil {
					tunErr <- errClientGone
					return
				}
				continue
			}
			select {
			case fromActor <- m:
			case <-tctx.Done():
				tunErr <- tctx.Err()
				return
			}
		}
	}()
	defer tun.Close()
	// The npm runner keeps a hibernatable socket silently when its actor stops: the
	// actor's own lifecycle says when the socket hibernates.
	var actorStopped <-chan struct{}
	if s.canHibernate {
		stopped := make(chan struct{})
		actorStopped = stopped
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			s.watchStop(tctx, stopped)
		}()
		defer func() { stop(); <-watching }()
	}
	s.setRelaying(true)
	defer s.setRelaying(false)
	for {
		select {
		case <-actorStopped:
			s.setRelaying(false)
			s.awaitAcks(fromActor, tunErr)
			return true
		case f := <-frames:
			switch {
			case f.sendErr != nil:
				s.closeClient(f.sendErr)
				return false
			case f.err != nil:
				code, reason := closeOf(f.err)
				s.mu.Lock()
				_ = s.tun.Send(proto.ToClientWebSocketClose{Code: code, Reason: reason})
				s.mu.Unlock()
				return false
			}
			// A message the client reader handed over while the session was not relaying.
			_, err := s.sendDirect(proto.ToClientWebSocketMessage{Data: f.data, Binary: f.typ == websocket.MessageBinary})
			s.handled <- struct{}{}
			if err != nil {
				s.closeClient(err)
				return false
			}
		case m := <-fromActor:
			switch m := m.(type) {
			case proto.ToServerWebSocketMessageAck:
				s.ack(m.Index)
			case proto.ToServerWebSocketClose:
				if m.Hibernate && s.canHibernate {
					return true
				}
				code := websocket.StatusNormalClosure
				if m.Code != nil {
					code = websocket.StatusCode(*m.Code)
				}
				reason := ""
				if m.Reason != nil {
					reason = *m.Reason
				}
				_ = s.client.Close(code, reason)
				return false
			}
		case err := <-tunErr:
			if ctx.Err() != nil || err == errClientGone {
				return false
			}
			if s.canHibernate {
				return true // the runner went away: wait for the actor to come back
			}
			s.closeClient(rerr.GuardWebSocketServiceUnavailable())
			return false
		}
	}
}

// watchStop closes stopped once the actor leaves the placement it has now (it stops, or
// runs again as another generation), or returns when ctx ends.
func (s *session) watchStop(ctx context.Context, stopped chan<- struct{}) {
	var gen *uint32
	s.watchActor(ctx, stopped, func(st actor.Status, found bool) bool {
		if gen == nil {
			gen = &st.Generation
		}
		placed := st.Phase == actor.PhaseRunning || st.Phase == actor.PhaseStarting
		return !found || !placed || st.Generation != *gen
	})
}

// watchWake closes woken once the actor runs on a host again (woken by anything but this
// socket), or returns when ctx ends. A generation still running when the watch begins (the
// socket hibernated before the actor's stop was recorded) does not count.
func (s *session) watchWake(ctx context.Context, woken chan<- struct{}) {
	first := true
	var stale *uint32
	s.watchActor(ctx, woken, func(st actor.Status, found bool) bool {
		running := found && st.Phase == actor.PhaseRunning && st.Placed
		if first {
			first = false
			if running {
				stale = &st.Generation
				return false
			}
		}
		if !running {
			stale = nil
			return false
		}
		return stale == nil || st.Generation != *stale
	})
}

// watchActor closes fired once done holds for the actor's status, or returns when ctx ends.
// Changes made on this node are seen at once, those made on another within a second.
func (s *session) watchActor(ctx context.Context, fired chan<- struct{}, done func(actor.Status, bool) bool) {
	for {
		changed := s.g.o.Actors.Watch(s.actorID)
		st, found, err := s.g.state(ctx, s.actorID)
		if ctx.Err() != nil {
			return
		}
		if err == nil && done(st, found) {
			close(fired)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(time.Second): // a change made on another node
		}
	}
}

// errClientGone ends a relay whose client could not be written to.
var errClientGone = errors.New("client socket gone")

// setRelaying lets the client reader send client messages on the tunnel itself, or stops it.
func (s *session) setRelaying(on bool) {
	s.mu.Lock()
	s.relaying = on
	s.mu.Unlock()
}

// sendDirect sends a client message on the tunnel if the session relays; sent reports
// whether it tried.
func (s *session) sendDirect(m proto.ToClientWebSocketMessage) (sent bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.relaying {
		return false, nil
	}
	return true, s.send(m)
}

// unacknowledged is the number of client messages the actor has not acknowledged.
func (s *session) unacknowledged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// awaitAcks reads the stopped actor's tunnel until every client message is acknowledged,
// for at most stopAckGrace: what is still unacknowledged then never reached the actor.
func (s *session) awaitAcks(fromActor <-chan proto.ToServerTunnelMessageKind, tunErr <-chan error) {
	if s.unacknowledged() == 0 {
		return
	}
	grace := time.NewTimer(stopAckGrace)
	defer grace.Stop()
	for s.unacknowledged() > 0 {
		select {
		case m := <-fromActor:
			if ack, ok := m.(proto.ToServerWebSocketMessageAck); ok {
				s.ack(ack.Index)
			}
		case <-tunErr:
			return
		case <-grace.C:
			return
		}
	}
}

// send sends a client message, keeping it until acknowledged when the socket hibernates.
// The caller holds s.mu.
func (s *session) send(m proto.ToClientWebSocketMessage) error {
	if !s.canHibernate {
		return s.tun.Send(m)
	}
	rt := s.tun.(ResumableTunnel)
	if len(s.pending) >= maxPendingCount || s.pendingBytes+len(m.Data) > maxPendingBytes {
		return rerr.GuardWebSocketPendingLimitReached()
	}
	idx, err := rt.SendIndexed(m)
	if err != nil {
		return rerr.GuardWebSocketServiceUnavailable().WithCause(err)
	}
	s.pending = append(s.pending, pendingMessage{idx: idx, msg: m})
	s.pendingBytes += len(m.Data)
	return nil
}

// ack drops the pending messages up to idx (indices wrap as u16).
func (s *session) ack(idx uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.pending) && int16(idx-s.pending[n].idx) >= 0 {
		s.pendingBytes -= len(s.pending[n].msg.Data)
		n++
	}
	s.pending = s.pending[n:]
}

func (s *session) closeClient(err error) {
	e, ok := rerr.As(err)
	if !ok {
		e = rerr.Internal(err)
	}
	_ = s.client.Close(websocket.StatusCode(rerr.CloseCode(e)), rerr.CloseReason(e, ""))
}

// hibernate keeps the client socket open while the actor sleeps, then resumes on the
// actor's next runner when the client sends again or the actor is woken otherwise. It reports false when the socket is
// over (the client left, or the actor could not be resumed).
func (s *session) hibernate(ctx context.Context, frames <-chan clientFrame) bool {
	rt := s.tun.(ResumableTunnel)
	hr := actor.HibernatingInput{ActorID: s.actorID, GatewayID: s.g.o.Hosts.GatewayID(), RequestID: rt.RequestID()}
	next := rt.NextIndex()
	keepalive := func() error {
		hr.NowMs = time.Now().UnixMilli()
		return udb.Update(ctx, s.g.o.DB, func(tx udb.Transaction) error {
			actor.SetHibernating(tx, hr)
			return nil
		})
	}
	forget := func() {
		_ = udb.Update(context.WithoutCancel(ctx), s.g.o.DB, func(tx udb.Transaction) error {
			actor.ClearHibernating(tx, hr)
			return nil
		})
	}
	if err := keepalive(); err != nil {
		s.closeClient(err)
		return false
	}
	if s.unacknowledged() > 0 {
		// A client message never reached the actor: wake it now for that message.
		return s.resumeHibernated(ctx, rt.RequestID(), next, forget)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	woken := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		s.watchWake(wctx, woken)
	}()
	defer func() { stopWatch(); <-watching }()
	t := time.NewTicker(hibernateKeepalive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			forget()
			return false
		case <-t.C:
			_ = keepalive()
			continue
		case <-woken:
		case f := <-frames:
			if f.sendErr != nil { // a message the last tunnel refused, as the actor stopped
				forget()
				s.closeClient(f.sendErr)
				return false
			}
			if f.err != nil {
				forget()
				return false
			}
			// The message waits, with the next index, until the actor is back.
			m := proto.ToClientWebSocketMessage{Data: f.data, Binary: f.typ == websocket.MessageBinary}
			s.pending = append(s.pending, pendingMessage{idx: next, msg: m})
			s.pendingBytes += len(m.Data)
			next++
			s.handled <- struct{}{}
		}
		return s.resumeHibernated(ctx, rt.RequestID(), next, forget)
	}
}

// resumeHibernated resumes the socket and forgets its hibernating record; it reports
// false, having closed the client, when the actor could not be resumed.
func (s *session) resumeHibernated(ctx context.Context, req proto.RequestID, next uint16, forget func()) bool {
	err := s.resume(ctx, req, next)
	forget()
	if err != nil {
		s.closeClient(err)
		return false
	}
	return true
}

// resume wakes the actor, reopens the request on its runner and sends the unacknowledged
// messages again under their indices.
func (s *session) resume(ctx context.Context, req proto.RequestID, next uint16) error {
	rt, _, _, err := s.g.resolve(ctx, s.actorID, false)
	if err != nil {
		return err
	}
	if rt.host.IsEnvoy() {
		// Envoy tunnels do not resume hibernated requests (the actor moved to an envoy).
		return rerr.GuardWebSocketServiceUnavailable()
	}
	tun, err := s.g.o.Hosts.ResumeTunnel(rt.host.RunnerID, req, next)
	if err != nil {
		return rerr.GuardWebSocketServiceUnavailable().WithCause(err)
	}
	s.tun = tun
	for _, p := range s.pending {
		if err := tun.(ResumableTunnel).Resend(p.idx, p.msg); err != nil {
			return rerr.GuardWebSocketServiceUnavailable().WithCause(err)
		}
	}
	return nil
}
