package runner

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/berthhq/berth/sdk/protocol/bridge"
	envoyproto "github.com/berthhq/berth/sdk/protocol/envoy"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// wire is the socket's protocol. The runner speaks the runner protocol's messages
// throughout; with Config.Envoy it connects to /envoys/connect and the wire translates them
// to and from the envoy protocol (sdk/protocol/bridge), so that one host serves both.
type wire interface {
	// path is the connect path, query the connect URL's query.
	path() string
	query(c Config) url.Values
	// initFirst reports whether the runner sends its init before the engine's (runners);
	// an envoy answers the engine's ToEnvoyInit.
	initFirst() bool
	// initFrame is the runner's init, encoded.
	initFrame(init proto.ToServerInit) ([]byte, error)
	// decodeInit reads the engine's init.
	decodeInit(b []byte) (proto.ToClientInit, error)
	// encode and decode translate the messages after the inits; decode returns nil for a
	// message of no meaning to the runner, encode nil bytes for one the engine does not
	// take.
	encode(m proto.ToServer) ([]byte, error)
	decode(b []byte) (proto.ToClient, error)
}

func newWire(c Config) wire {
	if c.Envoy {
		return &envoyWire{key: c.Key}
	}
	return runnerWire{version: c.ProtocolVersion}
}

// runnerWire is the runner protocol (v5 to v7) as is.
type runnerWire struct{ version int }

func (runnerWire) path() string { return "/runners/connect" }
func (w runnerWire) query(c Config) url.Values {
	return url.Values{"protocol_version": {strconv.Itoa(w.version)}, "namespace": {c.Namespace}, "runner_key": {c.Key}}
}
func (runnerWire) initFirst() bool { return true }
func (w runnerWire) initFrame(init proto.ToServerInit) ([]byte, error) {
	return proto.EncodeToServer(init, w.version)
}
func (w runnerWire) decodeInit(b []byte) (proto.ToClientInit, error) {
	m, err := proto.DecodeToClient(b, w.version)
	if err != nil {
		return proto.ToClientInit{}, &ProtocolError{fmt.Sprintf("the engine's first frame does not decode: %v", err)}
	}
	init, ok := m.(proto.ToClientInit)
	if !ok {
		return proto.ToClientInit{}, &ProtocolError{fmt.Sprintf("the engine's first frame is %T, not ToClientInit", m)}
	}
	return init, nil
}
func (w runnerWire) encode(m proto.ToServer) ([]byte, error) {
	return proto.EncodeToServer(m, w.version)
}
func (w runnerWire) decode(b []byte) (proto.ToClient, error) {
	return proto.DecodeToClient(b, w.version)
}

// envoyWire is the envoy protocol v8. The envoy is named by its key, which stands for the
// runner id; the engine's init carries the envoy lost threshold, read as the runner lost
// threshold.
type envoyWire struct {
	key string
	// window takes the engine's response-body window updates (set by New).
	window func(id proto.MessageID, consumed uint64)
}

const envoyVersion = envoyproto.LatestVersion

func (envoyWire) path() string { return "/envoys/connect" }
func (envoyWire) query(c Config) url.Values {
	return url.Values{
		"protocol_version": {strconv.Itoa(envoyVersion)}, "namespace": {c.Namespace}, "pool_name": {c.Name},
		"envoy_key": {c.Key}, "version": {strconv.FormatUint(uint64(c.Version), 10)},
	}
}
func (envoyWire) initFirst() bool { return false }
func (envoyWire) initFrame(init proto.ToServerInit) ([]byte, error) {
	md := envoyproto.ToRivetMetadata{Metadata: init.Metadata}
	if init.PrepopulateActorNames != nil {
		md.PrepopulateActorNames = make([]envoyproto.ActorName, len(init.PrepopulateActorNames))
		for i, n := range init.PrepopulateActorNames {
			md.PrepopulateActorNames[i] = envoyproto.ActorName(n)
		}
	}
	return envoyproto.EncodeToRivet(md, envoyVersion)
}
func (w envoyWire) decodeInit(b []byte) (proto.ToClientInit, error) {
	m, err := envoyproto.DecodeToEnvoy(b, envoyVersion)
	if err != nil {
		return proto.ToClientInit{}, &ProtocolError{fmt.Sprintf("the engine's first frame does not decode: %v", err)}
	}
	init, ok := m.(envoyproto.ToEnvoyInit)
	if !ok {
		return proto.ToClientInit{}, &ProtocolError{fmt.Sprintf("the engine's first frame is %T, not ToEnvoyInit", m)}
	}
	return proto.ToClientInit{RunnerID: w.key, Metadata: proto.ProtocolMetadata{
		RunnerLostThreshold: init.Metadata.EnvoyLostThreshold, ActorStopThreshold: init.Metadata.ActorStopThreshold,
	}}, nil
}

func (envoyWire) encode(m proto.ToServer) ([]byte, error) {
	var out envoyproto.ToRivet
	switch m := m.(type) {
	case proto.ToServerEvents:
		out = envoyproto.ToRivetEvents(bridge.EventsToEnvoy(m))
	case proto.ToServerAckCommands:
		out = envoyproto.ToRivetAckCommands{LastCommandCheckpoints: bridge.CheckpointsToEnvoy(m.LastCommandCheckpoints)}
	case proto.ToServerStopping:
		out = envoyproto.ToRivetStopping{}
	case proto.ToServerPong:
		out = envoyproto.ToRivetPong{Ts: m.Ts}
	case proto.ToServerKvRequest:
		d := bridge.KvRequestToEnvoy(m.Data)
		if d == nil {
			return nil, fmt.Errorf("runner: KV request %T has no envoy form", m.Data)
		}
		out = envoyproto.ToRivetKvRequest{ActorID: m.ActorID, RequestID: m.RequestID, Data: d}
	case proto.ToServerTunnelMessage:
		k := bridge.ToRivetTunnel(m.MessageKind)
		if k == nil {
			return nil, nil
		}
		out = envoyproto.ToRivetTunnelMessage{MessageID: bridge.MessageIDToEnvoy(m.MessageID), MessageKind: k}
	default:
		return nil, nil // nothing an envoy sends (ToServerInit went as ToRivetMetadata)
	}
	return envoyproto.EncodeToRivet(out, envoyVersion)
}

func (w envoyWire) decode(b []byte) (proto.ToClient, error) {
	m, err := envoyproto.DecodeToEnvoy(b, envoyVersion)
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case envoyproto.ToEnvoyPing:
		return proto.ToClientPing{Ts: m.Ts}, nil
	case envoyproto.ToEnvoyCommands:
		out := make(proto.ToClientCommands, len(m))
		for i, c := range m {
			out[i] = bridge.CommandToRunner(c)
		}
		return out, nil
	case envoyproto.ToEnvoyAckEvents:
		return proto.ToClientAckEvents{LastEventCheckpoints: bridge.CheckpointsToRunner(m.LastEventCheckpoints)}, nil
	case envoyproto.ToEnvoyKvResponse:
		return proto.ToClientKvResponse{RequestID: m.RequestID, Data: bridge.KvResponseToRunner(m.Data)}, nil
	case envoyproto.ToEnvoyTunnelMessage:
		if u, ok := m.MessageKind.(envoyproto.ToEnvoyResponseBodyWindowUpdate); ok {
			if w.window != nil {
				w.window(bridge.MessageIDToRunner(m.MessageID), u.ConsumedBytes)
			}
			return nil, nil
		}
		k := bridge.ToClientTunnel(m.MessageKind)
		if k == nil {
			return nil, nil
		}
		return proto.ToClientTunnelMessage{MessageID: bridge.MessageIDToRunner(m.MessageID), MessageKind: k}, nil
	}
	return nil, nil // SQLite answers and a second init: nothing this runner asked for
}

// withPath returns u with the wire's connect path appended to the endpoint's path.
func withPath(u *url.URL, w wire) *url.URL {
	out := *u
	out.Path = strings.TrimRight(u.Path, "/") + w.path()
	out.RawPath = ""
	return &out
}
