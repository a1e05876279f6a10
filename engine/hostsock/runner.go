package hostsock

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// runnerProtocol is the runner socket, GET /runners/connect?protocol_version=5..7&
// namespace=&runner_key= (docs/protocol.md, "Runners"): the runner speaks first
// (ToServerInit), is registered through ops/runner.Register under a fresh connection id
// (its prepopulated actor names join the namespace's), its pool's config is ensured and
// older versions drained when the config says so (engine/pegboard.Runners.Registered), and
// it is answered ToClientInit with its runner id.
type runnerProtocol struct{}

func (*runnerProtocol) info() protocolInfo {
	return protocolInfo{kind: kindRunner, resumable: true}
}

func (p *runnerProtocol) handshake(c *conn, r *http.Request) ([]byte, error) {
	ns, key, err := p.checkQuery(c, r)
	if err != nil {
		return nil, err
	}
	b, err := c.readInit()
	if err != nil {
		return nil, err
	}
	m, err := proto.DecodeToServer(b, c.version)
	if err != nil {
		return nil, rerr.WSInvalidPacket().WithCause(err)
	}
	init, ok := m.(proto.ToServerInit)
	if !ok {
		return nil, rerr.WSInvalidInitialPacket()
	}
	return nil, p.register(c, ns, key, init)
}

// checkQuery reads the connect URL; a missing or malformed field is ws.invalid_url. An
// unsupported version fails the init's decode with ws.invalid_packet, as on Rivet.
func (*runnerProtocol) checkQuery(c *conn, r *http.Request) (ns id.ID, key string, err error) {
	q := r.URL.Query()
	pv, name, key := q.Get("protocol_version"), q.Get("namespace"), q.Get("runner_key")
	if pv == "" || name == "" || key == "" {
		return id.ID{}, "", rerr.WSInvalidURL()
	}
	v, err := strconv.ParseUint(pv, 10, 16)
	if err != nil {
		return id.ID{}, "", rerr.WSInvalidURL()
	}
	c.version = int(v)
	res, err := c.s.o.ResolveNamespace(c.s.ctx, name)
	if err != nil {
		return id.ID{}, "", c.storeErr("resolve namespace", err)
	}
	return res.NamespaceID, key, nil
}

func (*runnerProtocol) register(c *conn, ns id.ID, key string, init proto.ToServerInit) error {
	c.connID = id.New(c.s.o.Label)
	in := oprunner.RegisterInput{
		Namespace: ns, Name: init.Name, Key: key, Version: init.Version,
		TotalSlots: init.TotalSlots, ProtocolVersion: uint16(c.version),
		ConnID: c.connID, NewRunnerID: id.New(c.s.o.Label), NowMs: time.Now().UnixMilli(),
	}
	if init.Metadata != nil {
		in.Metadata = json.RawMessage(*init.Metadata)
	}
	for _, n := range init.PrepopulateActorNames {
		an := oprunner.ActorName{Name: n.Name}
		if n.Metadata != "" {
			an.Metadata = json.RawMessage(n.Metadata)
		}
		in.ActorNames = append(in.ActorNames, an)
	}
	out, err := udb.Transact(c.s.ctx, c.s.o.DB, func(tx udb.Transaction) (oprunner.RegisterOutput, error) {
		return oprunner.Register(c.s.ctx, tx, in)
	})
	if err != nil {
		return c.storeErr("register", err)
	}
	// Live before ToClientInit goes out, so that Close and a later eviction see the socket.
	if err := c.register(actor.RunnerHost(out.RunnerID), out.PrevConnID); err != nil {
		return err
	}
	// The pool's config exists before the runner is told it is connected (on Rivet a create
	// right after the first connect could find none).
	serverless, err := c.s.o.Runners.Registered(c.s.ctx, in)
	if err != nil {
		return c.storeErr("after registration", err)
	}
	c.pool = actor.Pool{Namespace: ns, Selector: init.Name}
	b, err := proto.EncodeToClient(proto.ToClientInit{
		RunnerID: out.RunnerID.String(),
		Metadata: proto.ProtocolMetadata{
			RunnerLostThreshold: c.t.LostThreshold.Milliseconds(),
			ActorStopThreshold:  c.s.o.ActorStopThreshold.Milliseconds(),
			// As on Rivet, every runner of a serverless pool is told it, however it started.
			ServerlessDrainGracePeriod: c.s.o.serverlessDrainGrace(serverless),
		},
	}, c.version)
	if err != nil {
		return rerr.Internal(err)
	}
	return c.write(b)
}

func (*runnerProtocol) handle(c *conn, b []byte) error {
	m, err := proto.DecodeToServer(b, c.version)
	if err != nil {
		return rerr.WSInvalidPacket().WithCause(err)
	}
	switch m := m.(type) {
	case proto.ToServerPong:
		c.pong(m.Ts)
	case proto.ToServerStopping:
		c.stopping()
	case proto.ToServerEvents:
		c.events(eventsFromRunner(m))
	case proto.ToServerAckCommands:
		c.ackCommands(checkpointsFromRunner(m.LastCommandCheckpoints))
	case proto.ToServerKvRequest:
		c.kvRequest(m.RequestID, m.ActorID, m.Data)
	case proto.ToServerTunnelMessage:
		c.tunnelMessage(m.MessageID, m.MessageKind)
	}
	return nil
}

func (*runnerProtocol) encode(c *conn, m toHost) ([]byte, error) {
	var out proto.ToClient
	switch m := m.(type) {
	case pingMsg:
		out = proto.ToClientPing{Ts: m.ts}
	case commandsMsg:
		out = proto.ToClientCommands(commandsToRunner(m))
	case ackEventsMsg:
		out = proto.ToClientAckEvents{LastEventCheckpoints: checkpointsToRunner(m)}
	case kvResponse:
		out = proto.ToClientKvResponse{RequestID: m.requestID, Data: m.data}
	case tunnelMsg:
		out = proto.ToClientTunnelMessage{MessageID: m.id, MessageKind: m.kind}
	default:
		return nil, nil // window updates: runners get bodies whole
	}
	return proto.EncodeToClient(out, c.version)
}

func (*runnerProtocol) recordPong(ctx context.Context, tx udb.Transaction, j *pongJob) error {
	c := j.c
	out, err := oprunner.UpdatePing(ctx, tx, oprunner.UpdatePingInput{
		RunnerID: c.host.RunnerID, ConnID: c.connID, RttMs: j.rttMs, NowMs: j.at.UnixMilli(),
	})
	j.indexed, j.prevPingTs = out.Indexed, out.PrevPingTs
	return err
}

// afterPong: a runner whose previous ping was older than the eligibility threshold is
// eligible again, so its pool's queue may move.
func (*runnerProtocol) afterPong(c *conn, j pongJob) {
	m := c.s.o.Metrics
	m.RunnerPingRTT.Observe(float64(j.rttMs) / 1000)
	metrics.Since(m.RunnerPingTxn, j.began)
	switch err := j.err; {
	case err == nil:
		eligible := c.s.o.Actors.Config().RunnerEligibleThreshold.Milliseconds()
		if j.indexed && j.at.UnixMilli()-j.prevPingTs > eligible {
			c.s.o.Actors.MovePool(c.pool)
		}
	case c.pongRefused(err):
	default:
		c.s.o.Log.Warn("runner socket: update ping", c.logAttrs("error", err)...)
	}
}

// stopping drains the runner (ToServerStopping); with no actor on it, it stops at once and
// its socket closes with ws.eviction.
func (*runnerProtocol) stopping(c *conn) error {
	return c.s.o.Runners.Drain(c.s.ctx, c.host.RunnerID, c.connID)
}

// release takes the runner out of the allocation index when its socket ended without being
// replaced or stopped; a newer socket's registration makes it runner.stale_connection.
func (*runnerProtocol) release(ctx context.Context, tx udb.Transaction, c *conn) error {
	if c.evicted {
		return nil
	}
	return oprunner.Disconnect(ctx, tx, oprunner.DisconnectInput{RunnerID: c.host.RunnerID, ConnID: c.connID})
}

// hosted reads serializably, so that a write that moves the actor away, or a newer socket's
// registration, committed after this transaction read makes it retry and fail the check:
// KV is never written by a runner that no longer hosts the actor.
func (*runnerProtocol) hosted(ctx context.Context, r udb.ReadTransaction, c *conn, aid id.ID) error {
	rid := c.host.RunnerID
	cur, _, err := keys.Get(ctx, r, keys.RunnerConnIDKey{RunnerID: rid})
	if err != nil {
		return err
	}
	if cur != c.connID {
		return rerr.RunnerStaleConnection(rid.String())
	}
	_, placed, err := keys.Get(ctx, r, keys.RunnerActorKey{RunnerID: rid, ActorID: aid})
	if err != nil {
		return err
	}
	return checkPlaced(ctx, r, aid, placed, notRunners)
}
