package bare

import "testing"

// sample is a small struct shaped like a runner-protocol request start:
// {actorId: str, gen: u32, ts: i64, body: optional<data>, headers: map<str><str>, stream: bool}.
type sample struct {
	ActorID string
	Gen     uint32
	TS      int64
	Body    []byte // nil = absent
	Headers []header
	Stream  bool
}

type header struct{ K, V string }

func sampleMessage() sample {
	return sample{
		ActorID: "0123456789abcdefghijklmnopqrst",
		Gen:     3,
		TS:      1700000000000,
		Body:    []byte("hello"),
		Headers: []header{{"host", "example.com"}, {"content-type", "application/json"}},
	}
}

func (m *sample) encode(w *Writer) {
	w.String(m.ActorID)
	w.U32(m.Gen)
	w.I64(m.TS)
	w.Optional(m.Body != nil)
	if m.Body != nil {
		w.Data(m.Body)
	}
	w.MapLen(len(m.Headers))
	for _, h := range m.Headers {
		w.String(h.K)
		w.String(h.V)
	}
	w.Bool(m.Stream)
}

func (m *sample) decode(b []byte) error {
	r := NewReader(b)
	m.ActorID = r.Str()
	m.Gen = r.U32()
	m.TS = r.I64()
	m.Body = nil
	if r.Optional() {
		m.Body = r.Data()
	}
	m.Headers = m.Headers[:0]
	ReadMap(r, func(r *Reader) string {
		h := header{r.Str(), r.Str()}
		m.Headers = append(m.Headers, h)
		return h.K
	})
	m.Stream = r.Bool()
	return r.Done()
}

func BenchmarkEncodeSmall(b *testing.B) {
	m := sampleMessage()
	var w Writer
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		m.encode(&w)
	}
	b.SetBytes(int64(w.Len()))
}

func BenchmarkDecodeSmall(b *testing.B) {
	m := sampleMessage()
	var w Writer
	m.encode(&w)
	in := w.Bytes()
	var got sample
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := got.decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
