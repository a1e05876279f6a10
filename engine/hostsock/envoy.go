package hostsock

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/sdk/protocol/bridge"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

// envoyProtocol is the envoy socket, GET /envoys/connect?protocol_version=8&namespace=&
// pool_name=&envoy_key=&version= (docs/protocol.md, "Envoys"). The envoy names itself in
// the URL and its pool must have a runner config; the engine speaks first (ToEnvoyInit:
// the thresholds and the payload limit), and the envoy's first frame, normally
// ToRivetMetadata, registers it (ops/envoy.Register, with the runner config read
// serializably). Its messages are translated to the runner protocol's shapes by
// sdk/protocol/bridge; the SQLite page store is served in envoy_sqlite.go.
type envoyProtocol struct {
	pool   string // pool_name
	appVer uint32 // version: the envoy's application version
}

func (*envoyProtocol) info() protocolInfo {
	return protocolInfo{kind: kindEnvoy, pingAtOnce: true, windowed: true}
}

func (p *envoyProtocol) handshake(c *conn, r *http.Request) ([]byte, error) {
	ns, key, err := p.checkQuery(c, r)
	if err != nil {
		return nil, err
	}
	if err := p.write(c, proto.ToEnvoyInit{Metadata: proto.ProtocolMetadata{
		EnvoyLostThreshold:     c.t.LostThreshold.Milliseconds(),
		ActorStopThreshold:     c.s.o.ActorStopThreshold.Milliseconds(),
		MaxResponsePayloadSize: MaxResponsePayload,
	}}); err != nil {
		return nil, errGone
	}
	b, err := c.readInit()
	if err != nil {
		return nil, err
	}
	first, err := proto.DecodeToRivet(b, c.version)
	if err != nil {
		return nil, rerr.WSInvalidPacket().WithCause(err)
	}
	md, isMetadata := first.(proto.ToRivetMetadata)
	if err := p.register(c, ns, key, md); err != nil {
		return nil, err
	}
	if isMetadata {
		return nil, nil
	}
	return b, nil
}

// invalidRequest is ws.invalid_request, Rivet's close reason for a bad connect URL.
func invalidRequest(field, why string) error {
	return rerr.WSInvalidRequest().WithCause(errors.New(field + ": " + why))
}

// checkQuery validates the connect URL and the pool's runner config, before ToEnvoyInit.
func (p *envoyProtocol) checkQuery(c *conn, r *http.Request) (ns id.ID, key string, err error) {
	q := r.URL.Query()
	pv, err := strconv.ParseUint(q.Get("protocol_version"), 10, 16)
	switch {
	case err != nil:
		return id.ID{}, "", invalidRequest("protocol_version", "missing or not a number")
	case pv < proto.MinVersion || pv > proto.LatestVersion:
		return id.ID{}, "", invalidRequest("protocol_version", "unsupported, this engine speaks "+strconv.Itoa(proto.LatestVersion))
	}
	c.version = int(pv)
	name := q.Get("namespace")
	if name == "" {
		return id.ID{}, "", invalidRequest("namespace", "missing")
	}
	p.pool = q.Get("pool_name")
	if err := checkPoolName(p.pool); err != nil {
		return id.ID{}, "", err
	}
	key = q.Get("envoy_key")
	if err := checkEnvoyKey(key); err != nil {
		return id.ID{}, "", err
	}
	v, err := strconv.ParseUint(q.Get("version"), 10, 32)
	if err != nil {
		return id.ID{}, "", invalidRequest("version", "missing or not a u32")
	}
	p.appVer = uint32(v)
	res, err := c.s.o.ResolveNamespace(c.s.ctx, name)
	if err != nil {
		return id.ID{}, "", c.storeErr("resolve namespace", err)
	}
	_, err = udb.ReadTransact(c.s.ctx, c.s.o.DB, func(tx udb.ReadTransaction) (runnerconfig.Entry, error) {
		return runnerconfig.Get(c.s.ctx, tx, runnerconfig.GetInput{Namespace: res.NamespaceID, Name: p.pool})
	})
	if err != nil {
		return id.ID{}, "", p.configErr(c, err)
	}
	return res.NamespaceID, key, nil
}

// configErr maps a failed runner-config read: none is ws.no_runner_config.
func (p *envoyProtocol) configErr(c *conn, err error) error {
	if rerr.Is(err, rerr.CodeRunnerConfigNotFound) {
		return rerr.WSNoRunnerConfig(p.pool)
	}
	return c.storeErr("read runner config", err)
}

func checkPoolName(p string) error {
	switch {
	case p == "":
		return invalidRequest("pool_name", "missing")
	case len(p) > openvoy.MaxPoolNameLen:
		return invalidRequest("pool_name", "longer than "+strconv.Itoa(openvoy.MaxPoolNameLen)+" bytes")
	case !utf8.ValidString(p):
		return invalidRequest("pool_name", "not UTF-8")
	}
	return nil
}

// checkEnvoyKey applies Rivet's rule: 3 to 128 of [A-Za-z0-9_-], not starting or ending with
// '-' (ops/envoy.Register checks the same).
func checkEnvoyKey(k string) error {
	if len(k) < openvoy.MinEnvoyKeyLen || len(k) > openvoy.MaxEnvoyKeyLen {
		return invalidRequest("envoy_key", "must be 3 to 128 characters")
	}
	if k[0] == '-' || k[len(k)-1] == '-' {
		return invalidRequest("envoy_key", "must not start or end with '-'")
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return invalidRequest("envoy_key", "may hold only letters, digits, '-' and '_'")
		}
	}
	return nil
}

// register registers the envoy under a fresh connection id in one transaction, with the
// pool's runner config read serializably (a concurrent delete of it conflicts), and makes
// the socket live (conn.register).
func (p *envoyProtocol) register(c *conn, ns id.ID, key string, md proto.ToRivetMetadata) error {
	connID := id.New(c.s.o.Label)
	in := openvoy.RegisterInput{
		Namespace: ns, EnvoyKey: key, PoolName: p.pool, Version: p.appVer,
		ProtocolVersion: uint16(c.version), ConnID: connID, NowMs: time.Now().UnixMilli(),
	}
	if md.Metadata != nil {
		in.Metadata = []byte(*md.Metadata)
	}
	out, err := udb.Transact(c.s.ctx, c.s.o.DB, func(tx udb.Transaction) (openvoy.RegisterOutput, error) {
		e, err := runnerconfig.Get(c.s.ctx, tx, runnerconfig.GetInput{Namespace: ns, Name: p.pool, Serializable: true})
		if err != nil {
			return openvoy.RegisterOutput{}, err
		}
		if e.Config.Serverless != nil {
			// A serverless envoy that connects is a success of its pool (docs/serverless.md § 6).
			if err := runnerconfig.PoolSuccess(c.s.ctx, tx, ns, p.pool); err != nil {
				return openvoy.RegisterOutput{}, err
			}
		}
		return openvoy.Register(c.s.ctx, tx, in)
	})
	switch {
	case rerr.Is(err, rerr.CodeRunnerConfigNotFound):
		return p.configErr(c, err)
	case rerr.Is(err, rerr.CodeAPIBadRequest):
		return rerr.WSInvalidPacket().WithCause(err) // the metadata
	case err != nil:
		return c.storeErr("register", err)
	}
	c.connID = connID
	c.pool = actor.Pool{Namespace: ns, Selector: p.pool}
	if err := c.register(actor.EnvoyHost(ns, key), out.PrevConnID); err != nil {
		return err
	}
	c.s.o.Log.Debug("envoy registered", c.logAttrs("pool_name", p.pool, "new", out.New, "conn_id", connID.String())...)
	return nil
}

func (p *envoyProtocol) handle(c *conn, b []byte) error {
	m, err := proto.DecodeToRivet(b, c.version)
	if err != nil {
		return rerr.WSInvalidPacket().WithCause(err)
	}
	switch m := m.(type) {
	case proto.ToRivetPong:
		c.pong(m.Ts)
	case proto.ToRivetStopping:
		c.stopping()
	case proto.ToRivetMetadata:
		// Registration took the metadata of the envoy's first message; ops/envoy has no
		// update of metadata alone, and a second Register would clear a stop in progress.
		c.s.o.Log.Debug("envoy socket: later metadata ignored", c.logAttrs()...)
	case proto.ToRivetKvRequest:
		req := bridge.KvRequestToRunner(m.Data)
		if req == nil {
			c.reply(kvResponse{requestID: m.RequestID, data: rp.KvErrorResponse{Message: "unknown KV request"}})
			return nil
		}
		c.kvRequest(m.RequestID, m.ActorID, req)
	case proto.ToRivetEvents:
		c.events(eventsFromRunner(bridge.EventsToRunner(m)))
	case proto.ToRivetAckCommands:
		c.ackCommands(checkpointsFromRunner(bridge.CheckpointsToRunner(m.LastCommandCheckpoints)))
	case proto.ToRivetTunnelMessage:
		id := bridge.MessageIDToRunner(m.MessageID)
		switch k := m.MessageKind.(type) {
		case proto.ToRivetRequestBodyWindowUpdate:
			c.requestBodyConsumed(id, k.ConsumedBytes)
		case proto.ToRivetRequestBodyCancel:
			c.requestBodyCancelled(id)
		default:
			if kind := bridge.ToServerTunnel(m.MessageKind); kind != nil {
				c.tunnelMessage(id, kind)
			}
		}
	default:
		p.sqliteRequest(c, m)
	}
	return nil
}

func (p *envoyProtocol) encode(c *conn, m toHost) ([]byte, error) {
	var out proto.ToEnvoy
	switch m := m.(type) {
	case pingMsg:
		out = proto.ToEnvoyPing{Ts: m.ts}
	case commandsMsg:
		cmds := make(proto.ToEnvoyCommands, len(m))
		for i, cmd := range commandsToRunner(m) {
			cmds[i] = bridge.CommandToEnvoy(cmd, proto.StopActorReason(m[i].StopReason))
		}
		p.addPreloadedKv(c, cmds)
		out = cmds
	case ackEventsMsg:
		out = proto.ToEnvoyAckEvents{LastEventCheckpoints: bridge.CheckpointsToEnvoy(checkpointsToRunner(m))}
	case kvResponse:
		out = proto.ToEnvoyKvResponse{RequestID: m.requestID, Data: bridge.KvResponseToEnvoy(m.data)}
	case tunnelMsg:
		k := bridge.ToEnvoyTunnel(m.kind)
		if k == nil {
			return nil, nil // nothing the envoy protocol carries
		}
		if start, ok := k.(proto.ToEnvoyRequestStart); ok {
			start.ResponseStream = true // the gateway takes streamed responses
			k = start
		}
		out = proto.ToEnvoyTunnelMessage{MessageID: bridge.MessageIDToEnvoy(m.id), MessageKind: k}
	case bodyConsumed:
		out = proto.ToEnvoyTunnelMessage{MessageID: bridge.MessageIDToEnvoy(m.id),
			MessageKind: proto.ToEnvoyResponseBodyWindowUpdate{ConsumedBytes: m.consumed}}
	default:
		return nil, nil
	}
	return proto.EncodeToEnvoy(out, c.version)
}

// write sends one envoy message.
func (p *envoyProtocol) write(c *conn, m proto.ToEnvoy) error {
	b, err := proto.EncodeToEnvoy(m, c.version)
	if err != nil {
		return rerr.Internal(err)
	}
	return c.write(b)
}

func (*envoyProtocol) recordPong(ctx context.Context, tx udb.Transaction, j *pongJob) error {
	c := j.c
	_, err := openvoy.UpdatePing(ctx, tx, openvoy.UpdatePingInput{
		Namespace: c.host.Namespace, EnvoyKey: c.host.EnvoyKey, ConnID: c.connID, RttMs: j.rttMs, NowMs: j.at.UnixMilli(),
	})
	return err
}

// afterPong: the socket of an expired envoy is closed with 1011 envoy.expired, so that the
// envoy reconnects and registers again.
func (*envoyProtocol) afterPong(c *conn, j pongJob) {
	c.s.o.Metrics.EnvoyPingRTT.Observe(float64(j.rttMs) / 1000)
	switch err := j.err; {
	case err == nil:
	case rerr.Is(err, rerr.CodeEnvoyExpired), rerr.Is(err, rerr.CodeEnvoyNotFound):
		c.fail(err)
	case c.pongRefused(err):
	default:
		c.s.o.Log.Warn("envoy socket: update ping", c.logAttrs("error", err)...)
	}
}

// stopping drains the envoy (ToRivetStopping, engine/pegboard.Envoys.Stopping).
func (*envoyProtocol) stopping(c *conn) error {
	return c.s.o.Envoys.Stopping(c.s.ctx, c.host.Namespace, c.host.EnvoyKey, c.connID)
}

// release expires the envoy, unless a newer socket took it over (envoy.stale_connection,
// which writes nothing); its actors find the loss at their next liveness check.
func (*envoyProtocol) release(ctx context.Context, tx udb.Transaction, c *conn) error {
	_, err := openvoy.Expire(ctx, tx, openvoy.ExpireInput{
		Namespace: c.host.Namespace, EnvoyKey: c.host.EnvoyKey, ConnID: c.connID, NowMs: time.Now().UnixMilli(),
	})
	return err
}

// hosted checks, serializably, that this socket is its envoy's current one and that the
// actor is placed on the envoy.
func (*envoyProtocol) hosted(ctx context.Context, r udb.ReadTransaction, c *conn, aid id.ID) error {
	h := c.host
	cur, _, err := keys.Get(ctx, r, keys.EnvoyConnIDKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey})
	if err != nil {
		return err
	}
	if cur != c.connID {
		return rerr.EnvoyStaleConnection(h.EnvoyKey)
	}
	_, placed, err := keys.Get(ctx, r, keys.EnvoyActorKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey, ActorID: aid})
	if err != nil {
		return err
	}
	if !placed {
		// An actor its serverless pool's endpoint was asked to start: the envoy prepares it
		// (its SQLite first) before its first event binds it to the envoy.
		if placed, err = actor.AwaitsServerless(ctx, r, h, aid); err != nil {
			return err
		}
	}
	return checkPlaced(ctx, r, aid, placed, notEnvoys)
}

// EnvoyStartBody is the body of a serverless envoy pool's POST {url}/start for cmd, a
// start: the envoy protocol version as a little-endian u16, then a ToEnvoyCommands of that
// version carrying cmd alone, without preloaded KV (docs/serverless.md § 4.2).
func EnvoyStartBody(cmd actor.Command, version uint16) ([]byte, error) {
	wire := bridge.CommandToEnvoy(commandsToRunner([]actor.Command{cmd})[0], proto.StopActorReason(cmd.StopReason))
	b, err := proto.EncodeToEnvoy(proto.ToEnvoyCommands{wire}, int(version))
	if err != nil {
		return nil, err
	}
	return append(binary.LittleEndian.AppendUint16(make([]byte, 0, 2+len(b)), version), b...), nil
}
