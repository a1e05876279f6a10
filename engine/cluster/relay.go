package cluster

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// RelayPath is the internal endpoint another node opens a tunnel to a runner or an envoy
// through: ?runner_id= names a runner, ?namespace=&envoy_key= an envoy. A runner's tunnel
// carries the gateway's own ids (gateway_id, request_id, next: hex, hex, decimal) and every
// message its index, so that a hibernated WebSocket can resume on whichever node holds its
// actor's runner next (Local.OpenTunnel).
const RelayPath = "/internal/runners/tunnel"

// relayDialTimeout bounds the owner lookup plus the relay's dial and upgrade.
const relayDialTimeout = 5 * time.Second

// Relay control frames, text beside the binary tunnel messages: the gateway's node reports
// a streamed response's consumption (relayConsumed + a decimal byte count), and the host's
// node that the host cancelled the request body (relayBodyCancelled); the envoy protocol's
// window updates and body cancel have no form in the runner protocol the relay speaks.
const (
	relayConsumed      = "consumed "
	relayBodyCancelled = "request-body-cancelled"
)

// relayBuffer bounds the messages waiting for a relayed tunnel's reader, as a local tunnel's.
const relayBuffer = 1024

// ErrNoSocket: no other live node holds the socket (the gateway retries on a fresh lookup).
var ErrNoSocket = errors.New("cluster: no other live node holds that socket")

// hostQuery names h in RelayPath's query.
func hostQuery(h actor.Host) url.Values {
	if h.IsEnvoy() {
		return url.Values{"namespace": {h.Namespace.String()}, "envoy_key": {h.EnvoyKey}}
	}
	return url.Values{"runner_id": {h.RunnerID.String()}}
}

// queryHost is the host RelayPath's query names.
func queryHost(q url.Values) (actor.Host, *rerr.Error) {
	if key := q.Get("envoy_key"); key != "" {
		ns, err := id.Parse(q.Get("namespace"))
		if err != nil {
			return actor.Host{}, rerr.BadRequest("namespace", err.Error())
		}
		return actor.EnvoyHost(ns, key), nil
	}
	rid, err := id.Parse(q.Get("runner_id"))
	if err != nil {
		return actor.Host{}, rerr.BadRequest("runner_id", err.Error())
	}
	return actor.RunnerHost(rid), nil
}

// OpenRemoteTunnel opens a tunnel to h (a runner or an envoy) through the live node that
// holds its socket, or fails with ErrNoSocket when no other live node holds it (the
// gateway retries on a fresh lookup). A runner's request is gw's (this node's gateway),
// with a fresh id, and resumable (guard.ResumableTunnel); an envoy's is not.
func (n *Node) OpenRemoteTunnel(h actor.Host, gw proto.GatewayID) (guard.ResumableTunnel, error) {
	var req proto.RequestID
	_, _ = crand.Read(req[:])
	return n.openRemote(h, gw, req, 0)
}

// ResumeRemoteTunnel continues request req of gateway gw on runner rid, whose socket
// another live node holds, its next message numbered next (a hibernated WebSocket whose
// actor woke up there).
func (n *Node) ResumeRemoteTunnel(rid id.ID, gw proto.GatewayID, req proto.RequestID, next uint16) (guard.ResumableTunnel, error) {
	return n.openRemote(actor.RunnerHost(rid), gw, req, next)
}

func (n *Node) openRemote(h actor.Host, gw proto.GatewayID, req proto.RequestID, next uint16) (guard.ResumableTunnel, error) {
	ctx, cancel := context.WithTimeout(context.Background(), relayDialTimeout)
	defer cancel()
	fresh := false
	for {
		o, cached, ok, err := n.remoteOwner(ctx, h, fresh)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNoSocket
		}
		t, err := n.dialRelay(ctx, o, h, gw, req, next)
		if err == nil || !errors.Is(err, ErrNoSocket) {
			return t, err
		}
		n.owners.drop(h.Socket, o) // it refused, or is gone
		if !cached {
			return nil, err
		}
		fresh = true // the socket may have moved: look again
	}
}

// dialRelay opens the relay of a tunnel to h at its owner o.
func (n *Node) dialRelay(ctx context.Context, o opnode.Owner, h actor.Host, gw proto.GatewayID, req proto.RequestID, next uint16) (guard.ResumableTunnel, error) {
	u, err := url.Parse(o.Address)
	if err != nil {
		return nil, ErrNoSocket
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = RelayPath
	q := hostQuery(h)
	t := &remoteTunnel{in: make(chan proto.ToServerTunnelMessageKind, relayBuffer), closed: make(chan struct{})}
	if !h.IsEnvoy() {
		t.indexed, t.gw, t.req, t.next = true, gw, req, next
		q.Set("gateway_id", hex.EncodeToString(gw[:]))
		q.Set("request_id", hex.EncodeToString(req[:]))
		q.Set("next", strconv.Itoa(int(next)))
	}
	u.RawQuery = q.Encode()
	hdr := http.Header{}
	if tok := n.o.Auth.AdminToken(); tok != "" {
		hdr.Set("X-Rivet-Token", tok)
	}
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: n.o.HTTP})
	if err != nil {
		if e := overloaded(resp); e != nil {
			return nil, e
		}
		return nil, errors.Join(ErrNoSocket, err)
	}
	ws.SetReadLimit(wsconn.MaxFrame)
	t.ws = ws
	go t.readLoop()
	return t, nil
}

// overloaded is the guard.host_overloaded a relay's owner answered with (the host carries
// the most tunnels it may), or nil; it closes resp's body.
func overloaded(resp *http.Response) error {
	if resp == nil || resp.Body == nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if e, err := rerr.Parse(resp.StatusCode, b); err == nil && rerr.Is(e, rerr.CodeGuardHostOverloaded) {
		return e
	}
	return nil
}

// remoteOwner returns the other live node that holds h's socket; false when none does (no
// node, or this one, which does not have it: its record is stale). A record of another node
// id at this node's address is stale too: this node's previous run, SIGKILLed and restarted
// under a new generated id, whose lease has not run out yet (two live nodes cannot share an
// address); routing to it would be routing to this node, which has no such socket. Unless
// fresh, an owner found in the last ownerTTL is taken from the cache (cached true).
func (n *Node) remoteOwner(ctx context.Context, h actor.Host, fresh bool) (o opnode.Owner, cached, ok bool, err error) {
	now := n.o.Now()
	if !fresh {
		if o, ok := n.owners.get(h.Socket, now); ok {
			return o, true, true, nil
		}
	}
	in := opnode.SocketOwnerInput{Socket: h.Socket, NowMs: now.UnixMilli()}
	err = udb.View(ctx, n.o.DB, func(r udb.ReadTransaction) error {
		var err error
		o, ok, err = opnode.SocketOwner(ctx, r, in)
		return err
	})
	if err != nil || !ok || o.NodeID == n.o.ID || o.Address == "" || o.Address == n.o.Address {
		return opnode.Owner{}, false, false, err
	}
	n.owners.put(h.Socket, o, now)
	return o, false, true, nil
}

// HeldElsewhere reports whether another live node holds h's socket (as found in the last
// ownerTTL).
func (n *Node) HeldElsewhere(ctx context.Context, h actor.Host) (bool, error) {
	_, _, ok, err := n.remoteOwner(ctx, h, false)
	return ok, err
}

// remoteTunnel is a tunnel relayed to the node holding the runner's or envoy's socket.
type remoteTunnel struct {
	ws     *websocket.Conn
	in     chan proto.ToServerTunnelMessageKind
	sendMu sync.Mutex
	// bodyCancelled: the host wants no more of the request body (relayBodyCancelled).
	bodyCancelled atomic.Bool

	// A runner's tunnel is indexed: this side numbers the messages (next, under sendMu), as
	// the request of gateway gw with id req. An envoy's numbers them on the far side.
	indexed bool
	gw      proto.GatewayID
	req     proto.RequestID
	next    uint16

	closeOnce sync.Once
	closed    chan struct{}
}

// readLoop owns the reads; it ends when the relay does, closing the tunnel.
func (t *remoteTunnel) readLoop() {
	defer t.Close()
	for {
		typ, b, err := t.ws.Read(context.Background())
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			if string(b) == relayBodyCancelled {
				t.bodyCancelled.Store(true)
			}
			continue
		}
		m, err := proto.DecodeToServer(b, proto.LatestVersion)
		if err != nil {
			return
		}
		tm, ok := m.(proto.ToServerTunnelMessage)
		if !ok {
			continue
		}
		select {
		case t.in <- tm.MessageKind:
		default:
			return // the reader fell too far behind
		}
	}
}

func (t *remoteTunnel) Send(kind proto.ToClientTunnelMessageKind) error {
	_, err := t.SendIndexed(kind)
	return err
}

// SendIndexed sends kind with the next message index (a runner's tunnel) and returns it.
func (t *remoteTunnel) SendIndexed(kind proto.ToClientTunnelMessageKind) (uint16, error) {
	if _, chunk := kind.(proto.ToClientRequestChunk); chunk && t.bodyCancelled.Load() {
		return 0, core.ErrRequestBodyCancelled
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	idx := t.next
	if err := t.send(idx, kind); err != nil {
		return 0, err
	}
	if t.indexed {
		t.next++
	}
	return idx, nil
}

// Resend sends kind again under index idx (a hibernated WebSocket's unacknowledged
// messages); the next index does not move.
func (t *remoteTunnel) Resend(idx uint16, kind proto.ToClientTunnelMessageKind) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.send(idx, kind)
}

// send writes kind with index idx; the caller holds sendMu.
func (t *remoteTunnel) send(idx uint16, kind proto.ToClientTunnelMessageKind) error {
	m := proto.ToClientTunnelMessage{MessageKind: kind}
	if t.indexed {
		m.MessageID = proto.MessageID{GatewayID: t.gw, RequestID: t.req, MessageIndex: idx}
	}
	b, err := proto.EncodeToClient(m, proto.LatestVersion)
	if err != nil {
		return rerr.Internal(err)
	}
	return t.writeLocked(websocket.MessageBinary, b)
}

// RequestID, NextIndex and Resumable: a runner's tunnel is a guard.ResumableTunnel.
func (t *remoteTunnel) RequestID() proto.RequestID { return t.req }

func (t *remoteTunnel) NextIndex() uint16 {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.next
}

func (t *remoteTunnel) Resumable() bool { return t.indexed }

// ConsumedResponseBody passes the client's consumption of a streamed response to the node
// holding the host's socket, whose tunnel paces the host by it (guard.ResponseBodyConsumer).
func (t *remoteTunnel) ConsumedResponseBody(n int) error {
	return t.write(websocket.MessageText, []byte(relayConsumed+strconv.Itoa(n)))
}

func (t *remoteTunnel) write(typ websocket.MessageType, b []byte) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.writeLocked(typ, b)
}

func (t *remoteTunnel) writeLocked(typ websocket.MessageType, b []byte) error {
	select {
	case <-t.closed:
		return wsconn.ErrTunnelClosed
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.ws.Write(ctx, typ, b); err != nil {
		t.Close()
		return wsconn.ErrTunnelClosed
	}
	return nil
}

func (t *remoteTunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	select {
	case m := <-t.in:
		return m, nil
	default:
	}
	select {
	case m := <-t.in:
		return m, nil
	case <-t.closed:
		// Messages that came before the close still go first.
		select {
		case m := <-t.in:
			return m, nil
		default:
		}
		return nil, wsconn.ErrTunnelClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *remoteTunnel) Close() {
	t.closeOnce.Do(func() {
		close(t.closed)
		_ = t.ws.CloseNow()
	})
}

// RelayHandler serves RelayPath: it opens a tunnel on a runner or envoy socket this node
// holds and relays it over the WebSocket. 404 before the upgrade when the socket is not
// here; 503 while the node drains.
func (n *Node) RelayHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wsconn.CheckUpgrade(w, r, n.o.Auth, auth.Grant.AllowGlobal, n.o.Label) {
			return
		}
		if n.refuse.Load() {
			wsconn.WriteHTTPError(w, rerr.GuardServiceUnavailable())
			return
		}
		h, bad := queryHost(r.URL.Query())
		if bad != nil {
			wsconn.WriteHTTPError(w, bad)
			return
		}
		ids, bad := queryRequest(r.URL.Query())
		if bad != nil {
			wsconn.WriteHTTPError(w, bad)
			return
		}
		var tun guard.ResumableTunnel
		var err error
		if ids != nil {
			tun, err = n.local.OpenTunnel(h, ids.gw, &ids.req, ids.next)
		} else {
			// An envoy's relay: a request of this node's gateway, numbered here.
			tun, err = n.local.OpenTunnel(h, n.local.GatewayID(), nil, 0)
		}
		if err != nil {
			if e, ok := rerr.As(err); ok && rerr.Is(e, rerr.CodeGuardHostOverloaded) {
				wsconn.WriteHTTPError(w, e)
			} else if h.IsEnvoy() {
				wsconn.WriteHTTPError(w, rerr.EnvoyNotFound(h.EnvoyKey))
			} else {
				wsconn.WriteHTTPError(w, rerr.RunnerNotFound(""))
			}
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			tun.Close()
			return
		}
		ws.SetReadLimit(wsconn.MaxFrame)
		n.relays.Add(1)
		defer n.relays.Add(-1)
		n.relay(ws, tun, ids != nil)
	})
}

// relayRequest is a runner relay's request: its gateway, id and next message index.
type relayRequest struct {
	gw   proto.GatewayID
	req  proto.RequestID
	next uint16
}

// queryRequest parses RelayPath's gateway_id, request_id and next; nil when absent (an
// envoy's relay, whose far side numbers the messages).
func queryRequest(q url.Values) (*relayRequest, *rerr.Error) {
	if !q.Has("gateway_id") {
		return nil, nil
	}
	var r relayRequest
	gw, err := hex.DecodeString(q.Get("gateway_id"))
	if err != nil || len(gw) != len(r.gw) {
		return nil, rerr.BadRequest("gateway_id", "want 4 bytes in hex")
	}
	req, err := hex.DecodeString(q.Get("request_id"))
	if err != nil || len(req) != len(r.req) {
		return nil, rerr.BadRequest("request_id", "want 4 bytes in hex")
	}
	next, err := strconv.ParseUint(q.Get("next"), 10, 16)
	if err != nil {
		return nil, rerr.BadRequest("next", "want a message index")
	}
	copy(r.gw[:], gw)
	copy(r.req[:], req)
	r.next = uint16(next)
	return &r, nil
}

// relay copies the gateway's messages to the tunnel and the host's back until either side
// ends. An indexed relay's messages carry their index, which the tunnel sends them under.
func (n *Node) relay(ws *websocket.Conn, tun guard.ResumableTunnel, indexed bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer tun.Close()
	wg.Go(func() {
		defer cancel()
		for {
			m, err := tun.Recv(ctx)
			if err != nil {
				_ = ws.Close(websocket.StatusGoingAway, "tunnel closed")
				return
			}
			b, err := proto.EncodeToServer(proto.ToServerTunnelMessage{MessageKind: m}, proto.LatestVersion)
			if err != nil {
				_ = ws.CloseNow()
				return
			}
			if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
				return
			}
		}
	})
	consumer, _ := tun.(guard.ResponseBodyConsumer)
	cancelled := false
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			if rest, ok := strings.CutPrefix(string(b), relayConsumed); ok && consumer != nil {
				if n, err := strconv.Atoi(rest); err == nil && n > 0 {
					_ = consumer.ConsumedResponseBody(n)
				}
			}
			continue
		}
		m, err := proto.DecodeToClient(b, proto.LatestVersion)
		if err != nil {
			return
		}
		if tm, ok := m.(proto.ToClientTunnelMessage); ok {
			var err error
			if indexed {
				err = tun.Resend(tm.MessageID.MessageIndex, tm.MessageKind)
			} else {
				err = tun.Send(tm.MessageKind)
			}
			switch {
			case errors.Is(err, core.ErrRequestBodyCancelled):
				// The response goes on; the gateway's node stops sending the body.
				if !cancelled {
					cancelled = true
					_ = ws.Write(ctx, websocket.MessageText, []byte(relayBodyCancelled))
				}
			case err != nil:
				return
			}
		}
	}
}

// RefuseRelays makes the node refuse new relays (a drain), and Relays counts those open.
func (n *Node) RefuseRelays() { n.refuse.Store(true) }
func (n *Node) Relays() int64 { return n.relays.Load() }
