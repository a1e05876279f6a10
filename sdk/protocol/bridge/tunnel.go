package bridge

import (
	ep "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

func headersToEnvoy(l []rp.Header) []ep.Header {
	return mapList(l, func(h rp.Header) ep.Header { return ep.Header(h) })
}
func headersToRunner(l []ep.Header) []rp.Header {
	return mapList(l, func(h ep.Header) rp.Header { return rp.Header(h) })
}

// MessageIDToEnvoy and MessageIDToRunner convert a tunnel message id.
func MessageIDToEnvoy(m rp.MessageID) ep.MessageID {
	return ep.MessageID{GatewayID: ep.GatewayID(m.GatewayID), RequestID: ep.RequestID(m.RequestID), MessageIndex: m.MessageIndex}
}
func MessageIDToRunner(m ep.MessageID) rp.MessageID {
	return rp.MessageID{GatewayID: rp.GatewayID(m.GatewayID), RequestID: rp.RequestID(m.RequestID), MessageIndex: m.MessageIndex}
}

// ToEnvoyTunnel converts gateway traffic to an actor; nil for a kind of no known meaning.
func ToEnvoyTunnel(k rp.ToClientTunnelMessageKind) ep.ToEnvoyTunnelMessageKind {
	switch in := k.(type) {
	case rp.ToClientRequestStart:
		return ep.ToEnvoyRequestStart{ActorID: in.ActorID, Method: in.Method, Path: in.Path, Headers: headersToEnvoy(in.Headers), Body: in.Body, Stream: in.Stream}
	case rp.ToClientRequestChunk:
		return ep.ToEnvoyRequestChunk{Body: in.Body, Finish: in.Finish}
	case rp.ToClientRequestAbort:
		return ep.ToEnvoyRequestAbort{Reason: ep.HttpStreamAbortReason{Kind: ep.HttpStreamAbortCancelled}}
	case rp.ToClientWebSocketOpen:
		return ep.ToEnvoyWebSocketOpen{ActorID: in.ActorID, Path: in.Path, Headers: headersToEnvoy(in.Headers)}
	case rp.ToClientWebSocketMessage:
		return ep.ToEnvoyWebSocketMessage{Data: in.Data, Binary: in.Binary}
	case rp.ToClientWebSocketClose:
		return ep.ToEnvoyWebSocketClose{Code: in.Code, Reason: in.Reason}
	}
	return nil
}

// ToClientTunnel is ToEnvoyTunnel's inverse (for an SDK speaking the envoy protocol); nil
// for a kind the runner protocol cannot carry (body cancels and window updates).
func ToClientTunnel(k ep.ToEnvoyTunnelMessageKind) rp.ToClientTunnelMessageKind {
	switch in := k.(type) {
	case ep.ToEnvoyRequestStart:
		return rp.ToClientRequestStart{ActorID: in.ActorID, Method: in.Method, Path: in.Path, Headers: headersToRunner(in.Headers), Body: in.Body, Stream: in.Stream}
	case ep.ToEnvoyRequestChunk:
		return rp.ToClientRequestChunk{Body: in.Body, Finish: in.Finish}
	case ep.ToEnvoyRequestAbort:
		return rp.ToClientRequestAbort{}
	case ep.ToEnvoyWebSocketOpen:
		return rp.ToClientWebSocketOpen{ActorID: in.ActorID, Path: in.Path, Headers: headersToRunner(in.Headers)}
	case ep.ToEnvoyWebSocketMessage:
		return rp.ToClientWebSocketMessage{Data: in.Data, Binary: in.Binary}
	case ep.ToEnvoyWebSocketClose:
		return rp.ToClientWebSocketClose{Code: in.Code, Reason: in.Reason}
	}
	return nil
}

// ToServerTunnel converts actor traffic back to the gateway; nil for a kind the runner
// protocol cannot carry (request-body window updates and cancels).
func ToServerTunnel(k ep.ToRivetTunnelMessageKind) rp.ToServerTunnelMessageKind {
	switch in := k.(type) {
	case ep.ToRivetResponseStart:
		return rp.ToServerResponseStart{Status: in.Status, Headers: headersToRunner(in.Headers), Body: in.Body, Stream: in.Stream}
	case ep.ToRivetResponseChunk:
		return rp.ToServerResponseChunk{Body: in.Body, Finish: in.Finish}
	case ep.ToRivetResponseAbort:
		return rp.ToServerResponseAbort{}
	case ep.ToRivetWebSocketOpen:
		return rp.ToServerWebSocketOpen{CanHibernate: in.CanHibernate}
	case ep.ToRivetWebSocketMessage:
		return rp.ToServerWebSocketMessage{Data: in.Data, Binary: in.Binary}
	case ep.ToRivetWebSocketMessageAck:
		return rp.ToServerWebSocketMessageAck{Index: in.Index}
	case ep.ToRivetWebSocketClose:
		return rp.ToServerWebSocketClose{Code: in.Code, Reason: in.Reason, Hibernate: in.Hibernate}
	}
	return nil
}

// ToRivetTunnel is ToServerTunnel's inverse (for an SDK speaking the envoy protocol).
func ToRivetTunnel(k rp.ToServerTunnelMessageKind) ep.ToRivetTunnelMessageKind {
	switch in := k.(type) {
	case rp.ToServerResponseStart:
		return ep.ToRivetResponseStart{Status: in.Status, Headers: headersToEnvoy(in.Headers), Body: in.Body, Stream: in.Stream}
	case rp.ToServerResponseChunk:
		return ep.ToRivetResponseChunk{Body: in.Body, Finish: in.Finish}
	case rp.ToServerResponseAbort:
		return ep.ToRivetResponseAbort{Reason: ep.HttpStreamAbortReason{Kind: ep.HttpStreamAbortHandlerError}}
	case rp.ToServerWebSocketOpen:
		return ep.ToRivetWebSocketOpen{CanHibernate: in.CanHibernate}
	case rp.ToServerWebSocketMessage:
		return ep.ToRivetWebSocketMessage{Data: in.Data, Binary: in.Binary}
	case rp.ToServerWebSocketMessageAck:
		return ep.ToRivetWebSocketMessageAck{Index: in.Index}
	case rp.ToServerWebSocketClose:
		return ep.ToRivetWebSocketClose{Code: in.Code, Reason: in.Reason, Hibernate: in.Hibernate}
	}
	return nil
}
