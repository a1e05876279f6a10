package bare

import "fmt"

// A tiny dynamic BARE codec over the package's Reader and Writer, for tests: a schema decodes
// a value tree from a Reader and encodes a tree back, so a test can check that decoding then
// re-encoding reproduces the input byte for byte.

type schema interface {
	decode(r *Reader) any
	encode(w *Writer, v any)
}

type prim string // "uint", "int", "u8", …, "f64", "bool", "str", "data"

type (
	fixed    int // data[N]
	optional struct{ of schema }
	list     struct{ of schema }
	mapOf    struct{ key, val schema }
	record   []schema // struct: fields in order
	union    []schema // members by tag; nil = void member; a tag past the end is unknown
	skipped  struct{} // a union member the tests do not model: decoding it fails
)

// entry is one decoded map entry; maps decode to []entry to keep the wire order.
type entry struct{ k, v any }

// member is a decoded union value.
type member struct {
	tag uint64
	v   any
}

func (p prim) decode(r *Reader) any {
	switch p {
	case "uint":
		return r.Uint()
	case "int":
		return r.Int()
	case "u8":
		return r.U8()
	case "u16":
		return r.U16()
	case "u32":
		return r.U32()
	case "u64":
		return r.U64()
	case "i8":
		return r.I8()
	case "i16":
		return r.I16()
	case "i32":
		return r.I32()
	case "i64":
		return r.I64()
	case "f32":
		return r.F32()
	case "f64":
		return r.F64()
	case "bool":
		return r.Bool()
	case "str":
		return r.Str()
	case "data":
		return r.Data()
	}
	panic("unknown prim " + string(p)) // test schema bug, never input-driven
}

func (p prim) encode(w *Writer, v any) {
	switch p {
	case "uint":
		w.Uint(v.(uint64))
	case "int":
		w.Int(v.(int64))
	case "u8":
		w.U8(v.(uint8))
	case "u16":
		w.U16(v.(uint16))
	case "u32":
		w.U32(v.(uint32))
	case "u64":
		w.U64(v.(uint64))
	case "i8":
		w.I8(v.(int8))
	case "i16":
		w.I16(v.(int16))
	case "i32":
		w.I32(v.(int32))
	case "i64":
		w.I64(v.(int64))
	case "f32":
		w.F32(v.(float32))
	case "f64":
		w.F64(v.(float64))
	case "bool":
		w.Bool(v.(bool))
	case "str":
		w.String(v.(string))
	case "data":
		w.Data(v.([]byte))
	default:
		panic("unknown prim " + string(p))
	}
}

func (f fixed) decode(r *Reader) any       { return r.FixedData(int(f)) }
func (f fixed) encode(w *Writer, v any)    { w.FixedData(v.([]byte)) }
func (o optional) encode(w *Writer, v any) { w.Optional(v != nil); encodeIf(w, o.of, v) }
func (o optional) decode(r *Reader) any {
	if !r.Optional() {
		return nil
	}
	return o.of.decode(r)
}

func encodeIf(w *Writer, s schema, v any) {
	if v != nil {
		s.encode(w, v)
	}
}

func (l list) decode(r *Reader) any {
	n := r.ListLen()
	out := make([]any, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, l.of.decode(r))
	}
	return out
}

func (l list) encode(w *Writer, v any) {
	items := v.([]any)
	w.ListLen(len(items))
	for _, it := range items {
		l.of.encode(w, it)
	}
}

func (m mapOf) decode(r *Reader) any {
	var out []entry
	ReadMap(r, func(r *Reader) string {
		k := m.key.decode(r)
		out = append(out, entry{k, m.val.decode(r)})
		return fmt.Sprintf("%T:%v", k, k) // keys compared by value, data keys by content
	})
	return out
}

func (m mapOf) encode(w *Writer, v any) {
	es := v.([]entry)
	w.MapLen(len(es))
	for _, e := range es {
		m.key.encode(w, e.k)
		m.val.encode(w, e.v)
	}
}

func (s record) decode(r *Reader) any {
	out := make([]any, len(s))
	for i, f := range s {
		out[i] = f.decode(r)
	}
	return out
}

func (s record) encode(w *Writer, v any) {
	for i, f := range s {
		f.encode(w, v.([]any)[i])
	}
}

func (skipped) decode(r *Reader) any    { r.Failf("member not modelled"); return nil }
func (skipped) encode(w *Writer, v any) { panic("skipped member encoded") }

func (u union) decode(r *Reader) any {
	start := r.Offset()
	tag := r.UnionTag()
	if r.Err() != nil {
		return nil
	}
	if tag >= uint64(len(u)) {
		r.FailAt(start, "unknown union tag %d", tag)
		return nil
	}
	if u[tag] == nil {
		return member{tag: tag}
	}
	return member{tag, u[tag].decode(r)}
}

func (u union) encode(w *Writer, v any) {
	m := v.(member)
	w.UnionTag(m.tag)
	if u[m.tag] != nil {
		u[m.tag].encode(w, m.v)
	}
}

// Runner protocol v7 (docs/protocol.md, "Message families"), as far as the known-good vectors need.
var (
	checkpoint = record{prim("str"), prim("u32"), prim("i64")} // actorId, generation, index
	messageID  = record{fixed(4), fixed(4), prim("u16")}       // gatewayId, requestId, messageIndex
	strMap     = mapOf{prim("str"), prim("str")}

	toClient = union{
		// 0 ToClientInit{runnerId, metadata{runnerLostThreshold, actorStopThreshold, serverlessDrainGracePeriod}}
		record{prim("str"), record{prim("i64"), prim("i64"), optional{prim("i64")}}},
		// 1 ToClientCommands = list<CommandWrapper{checkpoint, inner}>
		list{record{checkpoint, union{
			// CommandStartActor{config{name, key, createTs, input}, hibernatingRequests}
			record{record{prim("str"), optional{prim("str")}, prim("i64"), optional{prim("data")}},
				list{record{fixed(4), fixed(4)}}},
			nil, // CommandStopActor
		}}},
		// 2 ToClientAckEvents{lastEventCheckpoints}
		record{list{checkpoint}},
		// 3 ToClientKvResponse{requestId, data}; only KvPutResponse (tag 3, void) is modelled
		record{prim("u32"), union{skipped{}, skipped{}, skipped{}, nil}},
		// 4 ToClientTunnelMessage{messageId, kind}; only ToClientRequestStart (tag 0)
		record{messageID, union{
			record{prim("str"), prim("str"), prim("str"), strMap, optional{prim("data")}, prim("bool")},
		}},
		// 5 ToClientPing{ts}
		record{prim("i64")},
	}

	toServer = union{
		// 0 ToServerInit{name, version, totalSlots, prepopulateActorNames, metadata}
		record{prim("str"), prim("u32"), prim("u32"),
			optional{mapOf{prim("str"), record{prim("str")}}}, optional{prim("str")}},
		// 1 ToServerEvents = list<EventWrapper{checkpoint, inner}>; inner tag 1 EventActorStateUpdate{state}
		list{record{checkpoint, union{
			skipped{}, // 0 EventActorIntent
			record{union{
				nil, // ActorStateRunning
				record{prim("uint"), optional{prim("str")}}, // ActorStateStopped{code enum, message}
			}},
		}}},
		skipped{}, // 2 ToServerAckCommands
		nil,       // 3 ToServerStopping (void)
		// 4 ToServerPong{ts}
		record{prim("i64")},
		// 5 ToServerKvRequest{actorId, requestId, data}; only KvPutRequest (tag 2) is modelled
		record{prim("str"), prim("u32"), union{skipped{}, skipped{},
			record{list{prim("data")}, list{prim("data")}}}},
		// 6 ToServerTunnelMessage{messageId, kind}; only ToServerResponseStart (tag 0)
		record{messageID, union{
			record{prim("u16"), strMap, optional{prim("data")}, prim("bool")},
		}},
	}

	// everything covers each primitive once, for fuzzing.
	everything = record{
		prim("uint"), prim("int"), prim("u8"), prim("u16"), prim("u32"), prim("u64"),
		prim("i8"), prim("i16"), prim("i32"), prim("i64"), prim("f32"), prim("f64"),
		prim("bool"), prim("str"), prim("data"), fixed(3),
		optional{prim("str")}, list{prim("int")}, mapOf{prim("uint"), prim("data")},
		union{nil, prim("f64"), record{prim("bool"), prim("str")}},
	}
)
