package hostsock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// kvSocket is a runner socket at one protocol version that sends KV requests one at a time.
type kvSocket struct {
	t   *testing.T
	c   *websocket.Conn
	v   int
	rid id.ID
	req uint32
}

func kvConnect(t *testing.T, e *env, key string, version int) *kvSocket {
	t.Helper()
	q := query("default", key)
	q.Set("protocol_version", strconv.Itoa(version))
	c, _, err := dial(t, e.url("/runners/connect", q))
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(4 << 20) // responses carry values
	s := &kvSocket{t: t, c: c, v: version}
	s.send(initMsg("pool"))
	m, err := s.recv()
	if err != nil {
		t.Fatal(err)
	}
	ci, ok := m.(proto.ToClientInit)
	if !ok {
		t.Fatalf("got %T, want ToClientInit", m)
	}
	s.rid = id.MustParse(ci.RunnerID)
	return s
}

func (s *kvSocket) send(m proto.ToServer) {
	s.t.Helper()
	b, err := proto.EncodeToServer(m, s.v)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		s.t.Fatal(err)
	}
}

func (s *kvSocket) recv() (proto.ToClient, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	m, err := proto.DecodeToClient(b, s.v)
	if err != nil {
		s.t.Fatal(err)
	}
	return m, nil
}

// do sends one KV request for actor aid and returns its response, answering pings and
// skipping other messages meanwhile.
func (s *kvSocket) do(aid string, data proto.KvRequestData) proto.KvResponseData {
	s.t.Helper()
	s.req++
	s.send(proto.ToServerKvRequest{ActorID: aid, RequestID: s.req, Data: data})
	for {
		m, err := s.recv()
		if err != nil {
			s.t.Fatalf("waiting for KV response %d: %v", s.req, err)
		}
		switch m := m.(type) {
		case proto.ToClientPing:
			s.send(proto.ToServerPong{Ts: m.Ts})
		case proto.ToClientKvResponse:
			if m.RequestID != s.req {
				s.t.Fatalf("response to request %d, want %d", m.RequestID, s.req)
			}
			return m.Data
		}
	}
}

// kvErr requires an error response and returns its message.
func (s *kvSocket) kvErr(aid string, data proto.KvRequestData) string {
	s.t.Helper()
	r := s.do(aid, data)
	e, ok := r.(proto.KvErrorResponse)
	if !ok {
		s.t.Fatalf("%T: got %T, want KvErrorResponse", data, r)
	}
	return e.Message
}

// ok requires the void response of the request's type.
func (s *kvSocket) ok(aid string, data proto.KvRequestData) {
	s.t.Helper()
	r := s.do(aid, data)
	var want proto.KvResponseData
	switch data.(type) {
	case proto.KvPutRequest:
		want = proto.KvPutResponse{}
	case proto.KvDeleteRequest, proto.KvDeleteRangeRequest:
		want = proto.KvDeleteResponse{}
	case proto.KvDropRequest:
		want = proto.KvDropResponse{}
	}
	if r != want {
		s.t.Fatalf("%T: got %#v, want %T", data, r, want)
	}
}

func (s *kvSocket) list(aid string, req proto.KvListRequest) []string {
	s.t.Helper()
	r, ok := s.do(aid, req).(proto.KvListResponse)
	if !ok {
		s.t.Fatalf("list %+v: not a KvListResponse", req)
	}
	return kvKeys(s.t, r.Keys, r.Values, r.Metadata)
}

// kvKeys checks that the lists are parallel and every value is "v"+key, and returns the keys.
func kvKeys(t *testing.T, ks, vs [][]byte, ms []proto.KvMetadata) []string {
	t.Helper()
	if len(vs) != len(ks) || len(ms) != len(ks) {
		t.Fatalf("%d keys, %d values, %d metadata", len(ks), len(vs), len(ms))
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		if string(vs[i]) != "v"+string(k) {
			t.Fatalf("%q = %q", k, vs[i])
		}
		out[i] = string(k)
	}
	return out
}

// place simulates the placement of actor aid (created in the default namespace) on runner
// rid; a zero rid only creates the actor.
func place(t *testing.T, e *env, rid id.ID) id.ID {
	t.Helper()
	aid := id.New(label)
	ns := defaultNamespace(t, e)
	write(t, e, func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorNamespaceIDKey{ActorID: aid}, ns)
		if !rid.IsZero() {
			keys.Set(tx, keys.RunnerActorKey{RunnerID: rid, ActorID: aid}, 1)
		}
		return nil
	})
	return aid
}

func kvPut(kv ...string) proto.KvPutRequest {
	var p proto.KvPutRequest
	for _, k := range kv {
		p.Keys, p.Values = append(p.Keys, []byte(k)), append(p.Values, []byte("v"+k))
	}
	return p
}

func byteLists(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestKVOverSocket runs every KV operation through a v7 runner socket.
func TestKVOverSocket(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	s := kvConnect(t, e, "k", 7)
	aid := place(t, e, s.rid).String()

	before := time.Now().UnixMilli()
	s.ok(aid, kvPut("a", "b", "ba", "c", "d\x00", "d\xff", ""))
	after := time.Now().UnixMilli()

	// Get answers only the keys found, with their metadata.
	g, ok := s.do(aid, proto.KvGetRequest{Keys: byteLists("missing", "c", "a", "nope")}).(proto.KvGetResponse)
	if !ok {
		t.Fatal("not a KvGetResponse")
	}
	if got := kvKeys(t, g.Keys, g.Values, g.Metadata); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("get: %q", got)
	}
	for _, m := range g.Metadata {
		if string(m.Version) != "dev" || m.UpdateTs < before || m.UpdateTs > after {
			t.Fatalf("metadata %q %d, want version dev, update_ts in [%d, %d]", m.Version, m.UpdateTs, before, after)
		}
	}

	all := []string{"", "a", "b", "ba", "c", "d\x00", "d\xff"}
	tests := []struct {
		name string
		req  proto.KvListRequest
		want []string
	}{
		{"all", proto.KvListRequest{Query: proto.KvListAllQuery{}}, all},
		{"all reverse", proto.KvListRequest{Query: proto.KvListAllQuery{}, Reverse: ptr(true)}, []string{"d\xff", "d\x00", "c", "ba", "b", "a", ""}},
		{"reverse false", proto.KvListRequest{Query: proto.KvListAllQuery{}, Reverse: ptr(false)}, all},
		{"range inclusive", proto.KvListRequest{Query: proto.KvListRangeQuery{Start: []byte("b"), End: []byte("c")}}, []string{"b", "ba", "c"}},
		{"range exclusive", proto.KvListRequest{Query: proto.KvListRangeQuery{Start: []byte("b"), End: []byte("c"), Exclusive: true}}, []string{"b", "ba"}},
		{"prefix", proto.KvListRequest{Query: proto.KvListPrefixQuery{Key: []byte("b")}}, []string{"b", "ba"}},
		{"prefix before 0xff", proto.KvListRequest{Query: proto.KvListPrefixQuery{Key: []byte("d")}}, []string{"d\x00", "d\xff"}},
		{"limit", proto.KvListRequest{Query: proto.KvListAllQuery{}, Limit: ptr(uint64(2))}, []string{"", "a"}},
		{"limit 0", proto.KvListRequest{Query: proto.KvListAllQuery{}, Limit: ptr(uint64(0))}, []string{}},
		{"reverse limit", proto.KvListRequest{Query: proto.KvListRangeQuery{Start: []byte("a"), End: []byte("c")}, Reverse: ptr(true), Limit: ptr(uint64(2))}, []string{"c", "ba"}},
	}
	for _, tt := range tests {
		if got := s.list(aid, tt.req); !slices.Equal(got, tt.want) {
			t.Errorf("list %s: %q, want %q", tt.name, got, tt.want)
		}
	}

	s.ok(aid, proto.KvDeleteRequest{Keys: byteLists("a", "missing")})
	s.ok(aid, proto.KvDeleteRangeRequest{Start: []byte("b"), End: []byte("c")})
	if got := s.list(aid, proto.KvListRequest{Query: proto.KvListAllQuery{}}); !slices.Equal(got, []string{"", "c", "d\x00", "d\xff"}) {
		t.Fatalf("after delete and delete range: %q", got)
	}
	s.ok(aid, proto.KvDropRequest{})
	if got := s.list(aid, proto.KvListRequest{Query: proto.KvListAllQuery{}}); len(got) != 0 {
		t.Fatalf("after drop: %q", got)
	}

	// A put of the largest payload (976 KiB less a little) fits one transaction and one frame.
	var big proto.KvPutRequest
	for i := range 8 {
		big.Keys = append(big.Keys, fmt.Appendf(nil, "big%d", i))
		big.Values = append(big.Values, bytes.Repeat([]byte{byte(i)}, 122_000))
	}
	s.ok(aid, big)
	g, ok = s.do(aid, proto.KvGetRequest{Keys: big.Keys}).(proto.KvGetResponse)
	if !ok || len(g.Keys) != 8 {
		t.Fatalf("get of the big put: %T with %d keys", g, len(g.Keys))
	}
	for i := range g.Values {
		if !bytes.Equal(g.Values[i], big.Values[i]) {
			t.Fatalf("big value %d differs", i)
		}
	}
}

// TestKVLimitsOverSocket: each limit is answered with a KvErrorResponse naming it, and the
// socket stays usable.
func TestKVLimitsOverSocket(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	s := kvConnect(t, e, "k", 7)
	aidID := place(t, e, s.rid)
	aid := aidID.String()
	long := []byte(strings.Repeat("k", 2047))
	many := make([][]byte, 129)
	for i := range many {
		many[i] = fmt.Appendf(nil, "%d", i)
	}
	tests := []struct {
		req  proto.KvRequestData
		want string
	}{
		{proto.KvGetRequest{Keys: many}, "a maximum of 128 keys is allowed"},
		{proto.KvGetRequest{Keys: [][]byte{long}}, "key is too long (max 2048 bytes)"},
		{proto.KvListRequest{Query: proto.KvListRangeQuery{Start: long, End: []byte("z")}}, "start key is too long (max 2048 bytes)"},
		{proto.KvListRequest{Query: proto.KvListPrefixQuery{Key: long}}, "prefix key is too long (max 2048 bytes)"},
		{proto.KvPutRequest{Keys: byteLists("a", "b"), Values: byteLists("1")}, "Keys list length != values list length"},
		{proto.KvPutRequest{Keys: many, Values: many}, "A maximum of 128 key-value entries is allowed"},
		{proto.KvPutRequest{Keys: [][]byte{long}, Values: byteLists("v")}, "key is too long (max 2048 bytes)"},
		{proto.KvPutRequest{Keys: byteLists("a"), Values: [][]byte{make([]byte, 128<<10+1)}}, "value is too large (max 128 KiB)"},
		{proto.KvPutRequest{Keys: byteLists("a", "b", "c", "d", "e", "f", "g", "h"), Values: slices.Repeat([][]byte{make([]byte, 125_000)}, 8)}, "total payload is too large (max 976 KiB)"},
		{proto.KvDeleteRequest{Keys: many}, "a maximum of 128 keys is allowed"},
		{proto.KvDeleteRangeRequest{Start: []byte("a"), End: long}, "end key is too long (max 2048 bytes)"},
	}
	for _, tt := range tests {
		if got := s.kvErr(aid, tt.req); got != tt.want {
			t.Errorf("%T: %q, want %q", tt.req, got, tt.want)
		}
	}
	// The storage quota: pretend 10 bytes are left.
	write(t, e, func(tx udb.Transaction) error {
		keys.Add(tx, keys.ActorKVSizeKey{ActorID: aidID}, actorkv.MaxStorageSize-10)
		return nil
	})
	if got, want := s.kvErr(aid, proto.KvPutRequest{Keys: byteLists("key"), Values: byteLists("0123456789")}),
		"Not enough space left in storage (10 bytes remaining, current payload is 15 bytes)."; got != want {
		t.Errorf("quota: %q, want %q", got, want)
	}
	s.ok(aid, kvPut("k")) // 1+2+2 bytes still fit
	if got := s.list(aid, proto.KvListRequest{Query: proto.KvListAllQuery{}}); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("stored: %q", got)
	}
}

// TestKVOnlyTheHostingRunner: a runner may touch the KV of the actors placed on it only.
func TestKVOnlyTheHostingRunner(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	a := kvConnect(t, e, "a", 7)
	b := kvConnect(t, e, "b", 7)
	onA := place(t, e, a.rid).String()
	notPlaced := place(t, e, id.ID{}).String()
	a.ok(onA, kvPut("x"))

	for _, req := range []proto.KvRequestData{
		proto.KvGetRequest{Keys: byteLists("x")},
		proto.KvListRequest{Query: proto.KvListAllQuery{}},
		kvPut("y"),
		proto.KvDeleteRequest{Keys: byteLists("x")},
		proto.KvDeleteRangeRequest{Start: []byte(""), End: []byte("z")},
		proto.KvDropRequest{},
	} {
		if got := b.kvErr(onA, req); got != "actor does not belong to runner" {
			t.Errorf("%T on another runner's actor: %q", req, got)
		}
		if got := a.kvErr(notPlaced, req); got != "actor does not belong to runner" {
			t.Errorf("%T on an actor placed nowhere: %q", req, got)
		}
		if got := a.kvErr(id.New(label).String(), req); got != "actor does not exist" {
			t.Errorf("%T on an unknown actor: %q", req, got)
		}
		if got := a.kvErr("not-an-id", req); got == "" || got == "actor does not exist" {
			t.Errorf("%T with a malformed actor id: %q, want the parse error", req, got)
		}
	}
	// Nothing b sent changed a's actor.
	if got := a.list(onA, proto.KvListRequest{Query: proto.KvListAllQuery{}}); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("after the refused requests: %q", got)
	}
	// Once the actor leaves a (its RunnerActorKey goes), a is refused too.
	write(t, e, func(tx udb.Transaction) error {
		keys.Clear(tx, keys.RunnerActorKey{RunnerID: a.rid, ActorID: id.MustParse(onA)})
		return nil
	})
	if got := a.kvErr(onA, proto.KvGetRequest{Keys: byteLists("x")}); got != "actor does not belong to runner" {
		t.Fatalf("after the actor left: %q", got)
	}
}

// TestKVStaleSocket: a socket whose runner was taken over by a newer connection is closed
// with ws.eviction on its next KV request, which writes nothing.
func TestKVStaleSocket(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	s := kvConnect(t, e, "k", 7)
	aid := place(t, e, s.rid)
	write(t, e, func(tx udb.Transaction) error {
		keys.Set(tx, keys.RunnerConnIDKey{RunnerID: s.rid}, id.New(label))
		return nil
	})
	s.send(proto.ToServerKvRequest{ActorID: aid.String(), RequestID: 1, Data: kvPut("x")})
	for {
		_, err := s.recv()
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction#") {
			t.Fatalf("socket ended with %v, want 1000 ws.eviction", err)
		}
		break
	}
	res, err := udb.ReadTransact(context.Background(), e.db, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
		return actorkv.Get(context.Background(), r, actorkv.GetInput{ActorID: aid, Keys: byteLists("x")})
	})
	if err != nil || len(res) != 0 {
		t.Fatalf("stale socket's put: %v, %v", res, err)
	}
}

// TestKVProtocolVersions: v5 and v6 have no delete range, and their drop is union tag 4.
func TestKVProtocolVersions(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	for _, v := range []int{5, 6, 7} {
		s := kvConnect(t, e, "v"+strconv.Itoa(v), v)
		aid := place(t, e, s.rid).String()
		s.ok(aid, kvPut("a", "b", "c"))
		if got := s.list(aid, proto.KvListRequest{Query: proto.KvListRangeQuery{Start: []byte("a"), End: []byte("c"), Exclusive: true}, Reverse: ptr(true)}); !slices.Equal(got, []string{"b", "a"}) {
			t.Fatalf("v%d list: %q", v, got)
		}
		s.ok(aid, proto.KvDeleteRequest{Keys: byteLists("b")})
		s.ok(aid, proto.KvDropRequest{})
		if got := s.list(aid, proto.KvListRequest{Query: proto.KvListAllQuery{}}); len(got) != 0 {
			t.Fatalf("v%d after drop: %q", v, got)
		}
	}
}
