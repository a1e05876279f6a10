package runner

import (
	"github.com/berthhq/berth/sdk/bare"
)

// DecodeToServer decodes one ToServer frame of the given protocol version. The frame must hold
// exactly one message. Every malformed input gives a *bare.DecodeError naming the offset
// (an unknown union tag names the offset of the tag); an unsupported version gives an
// *UnsupportedVersionError. Byte fields of the result alias b.
func DecodeToServer(b []byte, version int) (ToServer, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	r := bare.NewReader(b)
	m := ReadToServer(r, version)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToClient decodes one ToClient frame of the given protocol version, as DecodeToServer.
func DecodeToClient(b []byte, version int) (ToClient, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	r := bare.NewReader(b)
	m := ReadToClient(r, version)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeServerlessInit decodes the serverless SSE init payload (after base64): the u16
// little-endian protocol version, then ToServerlessServer tag 0. It returns the version too.
func DecodeServerlessInit(b []byte) (ToServerlessServerInit, int, error) {
	r := bare.NewReader(b)
	version := int(r.U16())
	if r.Err() == nil {
		if err := checkVersion(version); err != nil {
			return ToServerlessServerInit{}, 0, err
		}
	}
	start := r.Offset()
	if tag := r.UnionTag(); tag != 0 {
		r.FailAt(start, "unknown ToServerlessServer tag %d", tag)
	}
	m := ToServerlessServerInit{RunnerID: r.Str(), RunnerProtocolVersion: r.U16()}
	if err := r.Done(); err != nil {
		return ToServerlessServerInit{}, 0, err
	}
	return m, version, nil
}

// unionTag reads a union tag and the offset where it starts.
func unionTag(r *bare.Reader) (uint64, int) {
	start := r.Offset()
	return r.UnionTag(), start
}

func unknown(r *bare.Reader, start int, union string, tag uint64) {
	r.FailAt(start, "unknown %s tag %d", union, tag)
}

// ReadToServer reads one ToServer message of the given version from r (which must be a
// supported version; DecodeToServer checks it). On error it returns nil and r.Err() is set.
func ReadToServer(r *bare.Reader, version int) ToServer {
	tag, start := unionTag(r)
	var m ToServer
	switch tag {
	case 0:
		m = readToServerInit(r)
	case 1:
		n := r.ListLen()
		evs := make(ToServerEvents, 0, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			evs = append(evs, EventWrapper{Checkpoint: readCheckpoint(r), Inner: readEvent(r)})
		}
		m = evs
	case 2:
		m = ToServerAckCommands{LastCommandCheckpoints: readCheckpoints(r)}
	case 3:
		m = ToServerStopping{}
	case 4:
		m = ToServerPong{Ts: r.I64()}
	case 5:
		m = ToServerKvRequest{ActorID: r.Str(), RequestID: r.U32(), Data: readKvRequest(r, version)}
	case 6:
		m = ToServerTunnelMessage{MessageID: readMessageID(r), MessageKind: readToServerKind(r)}
	default:
		unknown(r, start, "ToServer", tag)
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

// ReadToClient reads one ToClient message of the given version from r, as ReadToServer.
func ReadToClient(r *bare.Reader, version int) ToClient {
	tag, start := unionTag(r)
	var m ToClient
	switch tag {
	case 0:
		init := ToClientInit{RunnerID: r.Str()}
		init.Metadata.RunnerLostThreshold = r.I64()
		if version >= Version6 {
			init.Metadata.ActorStopThreshold = r.I64()
			init.Metadata.ServerlessDrainGracePeriod = bare.ReadOptional(r, (*bare.Reader).I64)
		}
		m = init
	case 1:
		n := r.ListLen()
		cmds := make(ToClientCommands, 0, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			cmds = append(cmds, CommandWrapper{Checkpoint: readCheckpoint(r), Inner: readCommand(r)})
		}
		m = cmds
	case 2:
		m = ToClientAckEvents{LastEventCheckpoints: readCheckpoints(r)}
	case 3:
		m = ToClientKvResponse{RequestID: r.U32(), Data: readKvResponse(r)}
	case 4:
		m = ToClientTunnelMessage{MessageID: readMessageID(r), MessageKind: readToClientKind(r)}
	case 5:
		m = ToClientPing{Ts: r.I64()}
	default:
		unknown(r, start, "ToClient", tag)
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

// Primitive helpers.

func readHeaders(r *bare.Reader) []Header {
	var h []Header
	bare.ReadMap(r, func(r *bare.Reader) string {
		kv := Header{Name: r.Str(), Value: r.Str()}
		h = append(h, kv)
		return kv.Name
	})
	if h == nil {
		h = []Header{}
	}
	return h
}

func readCheckpoint(r *bare.Reader) ActorCheckpoint {
	return ActorCheckpoint{ActorID: r.Str(), Generation: r.U32(), Index: r.I64()}
}

func readCheckpoints(r *bare.Reader) []ActorCheckpoint { return bare.ReadList(r, readCheckpoint) }

func readMessageID(r *bare.Reader) (m MessageID) {
	r.FixedDataInto(m.GatewayID[:])
	r.FixedDataInto(m.RequestID[:])
	m.MessageIndex = r.U16()
	return m
}

func readHibernatingRequest(r *bare.Reader) (h HibernatingRequest) {
	r.FixedDataInto(h.GatewayID[:])
	r.FixedDataInto(h.RequestID[:])
	return h
}

func readKvMetadata(r *bare.Reader) []KvMetadata {
	return bare.ReadList(r, func(r *bare.Reader) KvMetadata { return KvMetadata{Version: r.Data(), UpdateTs: r.I64()} })
}

// ToServer members.

func readToServerInit(r *bare.Reader) ToServerInit {
	m := ToServerInit{Name: r.Str(), Version: r.U32(), TotalSlots: r.U32()}
	if r.Optional() {
		names := []ActorName{}
		bare.ReadMap(r, func(r *bare.Reader) string {
			n := ActorName{Name: r.Str(), Metadata: r.Str()}
			names = append(names, n)
			return n.Name
		})
		m.PrepopulateActorNames = names
	}
	m.Metadata = bare.ReadOptional(r, (*bare.Reader).Str)
	return m
}

func readEvent(r *bare.Reader) Event {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		itag, istart := unionTag(r)
		switch itag {
		case 0:
			return EventActorIntent{Intent: ActorIntentSleep{}}
		case 1:
			return EventActorIntent{Intent: ActorIntentStop{}}
		}
		unknown(r, istart, "ActorIntent", itag)
	case 1:
		stag, sstart := unionTag(r)
		switch stag {
		case 0:
			return EventActorStateUpdate{State: ActorStateRunning{}}
		case 1:
			cstart := r.Offset()
			code := StopCode(r.Uint())
			if code > StopCodeError {
				r.FailAt(cstart, "unknown StopCode %d", code)
			}
			return EventActorStateUpdate{State: ActorStateStopped{Code: code, Message: bare.ReadOptional(r, (*bare.Reader).Str)}}
		}
		unknown(r, sstart, "ActorState", stag)
	case 2:
		return EventActorSetAlarm{AlarmTs: bare.ReadOptional(r, (*bare.Reader).I64)}
	default:
		unknown(r, start, "Event", tag)
	}
	return nil
}

func readKvRequest(r *bare.Reader, version int) KvRequestData {
	tag, start := unionTag(r)
	if version < Version7 && tag >= 4 {
		if tag == 4 {
			return KvDropRequest{}
		}
		unknown(r, start, "KvRequestData", tag)
		return nil
	}
	switch tag {
	case 0:
		return KvGetRequest{Keys: bare.ReadList(r, (*bare.Reader).Data)}
	case 1:
		m := KvListRequest{Query: readListQuery(r)}
		if r.Optional() {
			v := r.Bool()
			m.Reverse = &v
		}
		if r.Optional() {
			v := r.U64()
			m.Limit = &v
		}
		return m
	case 2:
		return KvPutRequest{Keys: bare.ReadList(r, (*bare.Reader).Data), Values: bare.ReadList(r, (*bare.Reader).Data)}
	case 3:
		return KvDeleteRequest{Keys: bare.ReadList(r, (*bare.Reader).Data)}
	case 4:
		return KvDeleteRangeRequest{Start: r.Data(), End: r.Data()}
	case 5:
		return KvDropRequest{}
	}
	unknown(r, start, "KvRequestData", tag)
	return nil
}

func readListQuery(r *bare.Reader) KvListQuery {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		return KvListAllQuery{}
	case 1:
		return KvListRangeQuery{Start: r.Data(), End: r.Data(), Exclusive: r.Bool()}
	case 2:
		return KvListPrefixQuery{Key: r.Data()}
	}
	unknown(r, start, "KvListQuery", tag)
	return nil
}

func readToServerKind(r *bare.Reader) ToServerTunnelMessageKind {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		return ToServerResponseStart{Status: r.U16(), Headers: readHeaders(r), Body: r.OptData(), Stream: r.Bool()}
	case 1:
		return ToServerResponseChunk{Body: r.Data(), Finish: r.Bool()}
	case 2:
		return ToServerResponseAbort{}
	case 3:
		return ToServerWebSocketOpen{CanHibernate: r.Bool()}
	case 4:
		return ToServerWebSocketMessage{Data: r.Data(), Binary: r.Bool()}
	case 5:
		return ToServerWebSocketMessageAck{Index: r.U16()}
	case 6:
		return ToServerWebSocketClose{Code: bare.ReadOptional(r, (*bare.Reader).U16), Reason: bare.ReadOptional(r, (*bare.Reader).Str), Hibernate: r.Bool()}
	}
	unknown(r, start, "ToServerTunnelMessageKind", tag)
	return nil
}

// ToClient members.

func readCommand(r *bare.Reader) Command {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		var m CommandStartActor
		m.Config = ActorConfig{Name: r.Str(), Key: bare.ReadOptional(r, (*bare.Reader).Str), CreateTs: r.I64(), Input: r.OptData()}
		m.HibernatingRequests = bare.ReadList(r, readHibernatingRequest)
		return m
	case 1:
		return CommandStopActor{}
	}
	unknown(r, start, "Command", tag)
	return nil
}

func readKvResponse(r *bare.Reader) KvResponseData {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		return KvErrorResponse{Message: r.Str()}
	case 1:
		return KvGetResponse{Keys: bare.ReadList(r, (*bare.Reader).Data), Values: bare.ReadList(r, (*bare.Reader).Data), Metadata: readKvMetadata(r)}
	case 2:
		return KvListResponse{Keys: bare.ReadList(r, (*bare.Reader).Data), Values: bare.ReadList(r, (*bare.Reader).Data), Metadata: readKvMetadata(r)}
	case 3:
		return KvPutResponse{}
	case 4:
		return KvDeleteResponse{}
	case 5:
		return KvDropResponse{}
	}
	unknown(r, start, "KvResponseData", tag)
	return nil
}

func readToClientKind(r *bare.Reader) ToClientTunnelMessageKind {
	tag, start := unionTag(r)
	switch tag {
	case 0:
		return ToClientRequestStart{ActorID: r.Str(), Method: r.Str(), Path: r.Str(), Headers: readHeaders(r), Body: r.OptData(), Stream: r.Bool()}
	case 1:
		return ToClientRequestChunk{Body: r.Data(), Finish: r.Bool()}
	case 2:
		return ToClientRequestAbort{}
	case 3:
		return ToClientWebSocketOpen{ActorID: r.Str(), Path: r.Str(), Headers: readHeaders(r)}
	case 4:
		return ToClientWebSocketMessage{Data: r.Data(), Binary: r.Bool()}
	case 5:
		return ToClientWebSocketClose{Code: bare.ReadOptional(r, (*bare.Reader).U16), Reason: bare.ReadOptional(r, (*bare.Reader).Str)}
	}
	unknown(r, start, "ToClientTunnelMessageKind", tag)
	return nil
}
