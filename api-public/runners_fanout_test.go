package apipublic

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// FuzzMembers checks the quick member scan against encoding/json: on any valid JSON object
// it finds exactly the members encoding/json sees (the last of a repeated name), and it
// never fails on other input.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"runner_id":"abc","create_ts":5}`,
		` { "create_ts" : -12 , "x": {"create_ts": 1, "y": ["}", "\"", {"a":[1,2]}]}, "runner_id" : "q\"r" } `,
		`{"a":"\\","create_ts":1e3,"runner_id":null,"runner_id":"z"}`,
		`{"metadata":{"runner_id":"inner"},"create_ts":1}`,
		`{"run\u006eer_id":"x","create_ts":1}`,
		`{}`, `[]`, `"x"`, `{"a`, `{"a":`, `{"a":"`, `{"a":{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := members(b, "runner_id", "create_ts")
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil {
			return // not an object: only "no panic, no hang" is asked
		}
		if !ok {
			if !bytes.Contains(b, []byte(`\`)) {
				t.Fatalf("%s: refused, and no member name holds an escape", b)
			}
			return // a name holds an escape: the slow way decides
		}
		for i, name := range []string{"runner_id", "create_ts"} {
			if want, found := m[name]; !bytes.Equal(v[i], want) || (v[i] != nil) != found {
				t.Fatalf("%s: %s is %q, encoding/json says %q (%v)", b, name, v[i], want, found)
			}
		}
	})
}

func TestRawRunner(t *testing.T) {
	rid := id.New(3)
	for _, tc := range []struct {
		body    string
		wantErr bool
	}{
		{`{"runner_id":"` + rid.String() + `","name":"a\"b","create_ts":42,"metadata":{"create_ts":1}}`, false},
		{`{"create_ts":42,"runner_id":"` + rid.String() + `"}`, false},
		{`{"runner_id":"` + rid.String() + `","create_ts":4.2e1}`, true}, // the slow way says why
		{`{"runner_id":"nope","create_ts":42}`, true},
	} {
		var r rawRunner
		err := json.Unmarshal([]byte(tc.body), &r)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: accepted", tc.body)
			}
			continue
		}
		if err != nil || r.id != rid || r.createTs != 42 || string(r.raw) != tc.body {
			t.Errorf("%s: %+v %v", tc.body, r, err)
		}
	}
	var e rawEnvoy
	body := `{"envoy_key":"k-1","create_ts":7,"metadata":{"envoy_key":"x"}}`
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.key != "k-1" || e.createTs != 7 || string(e.raw) != body {
		t.Errorf("envoy: %+v %v", e, err)
	}
}

func TestPeerPage(t *testing.T) {
	rid := id.New(2)
	r := `{"runner_id":"` + rid.String() + `","create_ts":9}`
	for _, tc := range []struct {
		body    string
		runners int
		cursor  string
	}{
		{`{"runners":[` + r + `,` + r + `],"pagination":{"cursor":"c1"}}`, 2, "c1"},
		{` {"pagination" : {"cursor":null}, "runners" : [ ` + r + ` ] } `, 1, ""},
		{`{"runners":[],"pagination":{"cursor":null}}`, 0, ""},
		{`{"r\u0075nners":[` + r + `],"pagination":{"cursor":"c2"}}`, 1, "c2"}, // the slow way
	} {
		var p peerPage
		if err := json.Unmarshal([]byte(tc.body), &p); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		cur := ""
		if p.Pagination.Cursor != nil {
			cur = *p.Pagination.Cursor
		}
		if len(p.Runners) != tc.runners || cur != tc.cursor || tc.runners > 0 && (p.Runners[0].id != rid || p.Runners[0].createTs != 9) {
			t.Errorf("%s: %+v", tc.body, p)
		}
	}
	var p peerPage
	if err := json.Unmarshal([]byte(`{"runners":[{"runner_id":"bad","create_ts":1}],"pagination":{"cursor":null}}`), &p); err == nil {
		t.Error("a bad runner id accepted")
	}

	// The items are the page's own: the caller may reuse its buffer.
	body := []byte(`{"runners":[` + r + `,` + r + `],"pagination":{"cursor":null}}`)
	p = peerPage{}
	if err := p.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	clear(body)
	for _, it := range p.Runners {
		if string(it.raw) != r {
			t.Errorf("item %q after the input was overwritten; want %q", it.raw, r)
		}
	}
}

// A Server's in-process api-peer is made once, and forgotten when the Server is collected.
func TestLocalPeer(t *testing.T) {
	if p := New(Deps{}).localPeer(); p != nil {
		t.Fatal("a Server without a store has an in-process api-peer")
	}
	db, err := udb.Open(bg, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := New(Deps{DB: db, Topology: apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{{Name: "a", Label: 1, IsLeader: true}}}})
	if p := s.localPeer(); p == nil || p != s.localPeer() {
		t.Fatalf("localPeer = %p, then %p; want one api-peer", p, s.localPeer())
	}
	key := weak.Make(s)
	s = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if _, ok := localPeers.Load(key); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the in-process api-peer of a collected Server is still held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FuzzPeerPage checks the one-pass page scan against encoding/json (peerPage.slow): on valid
// JSON that encoding/json decodes, the scan reads the same items and cursor; where the scan
// fails, encoding/json fails too. (The scan may accept pages encoding/json refuses, such as
// an object where the list belongs; a berth api-peer writes neither.)
func FuzzPeerPage(f *testing.F) {
	rid := id.New(2).String()
	r := `{"runner_id":"` + rid + `","create_ts":9,"metadata":{"runner_id":"x","a":[1,{"b":"]"}]}}`
	for _, s := range []string{
		`{"runners":[` + r + `,` + r + `],"pagination":{"cursor":"c1"}}`,
		` {"pagination" : {"cursor":null}, "runners" : [ ` + r + ` ] , "x": [1,"]"]} `,
		`{"runners":[],"envoys":[{"envoy_key":"k","create_ts":3}],"pagination":{"cursor":null}}`,
		`{"runners":[` + r + `],"runners":[],"pagination":{}}`,
		`{"r\u0075nners":[` + r + `]}`, `{"runners":null}`, `{"runners":[1]}`, `{"runners":[{"runner_id":"bad"}]}`,
		`{"envoys":[{"envoy_key":"a\"b","create_ts":1e2}]}`, `[]`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // encoding/json never hands the scan invalid JSON
		}
		// encoding/json also matches member names that differ in case (and U+017F, U+212A);
		// the scan matches names exactly, as berth's api-peer writes them.
		lower := bytes.ToLower(b)
		for _, name := range []string{"runners", "envoys", "pagination", "cursor", "runner_id", "envoy_key", "create_ts"} {
			if bytes.Count(lower, []byte(name)) != bytes.Count(b, []byte(name)) {
				return
			}
		}
		if bytes.ContainsAny(b, "\u017f\u212a") { // (a name with an escape is the slow way's anyway)
			return
		}
		var fast, slow peerPage
		fastErr := fast.UnmarshalJSON(b)
		slowErr := slow.slow(b)
		if fastErr != nil && slowErr == nil {
			t.Fatalf("%s: the scan fails (%v), encoding/json does not", b, fastErr)
		}
		if fastErr != nil || slowErr != nil {
			return
		}
		if len(fast.Runners) != len(slow.Runners) || len(fast.Envoys) != len(slow.Envoys) ||
			(fast.Pagination.Cursor == nil) != (slow.Pagination.Cursor == nil) ||
			fast.Pagination.Cursor != nil && *fast.Pagination.Cursor != *slow.Pagination.Cursor {
			t.Fatalf("%s:\nscan %+v\njson %+v", b, fast, slow)
		}
		for i, r := range fast.Runners {
			s := slow.Runners[i]
			if !bytes.Equal(r.raw, s.raw) || r.createTs != s.createTs || r.id != s.id {
				t.Fatalf("%s: runner %d: scan %+v, json %+v", b, i, r, s)
			}
		}
		for i, e := range fast.Envoys {
			s := slow.Envoys[i]
			if !bytes.Equal(e.raw, s.raw) || e.createTs != s.createTs || e.key != s.key {
				t.Fatalf("%s: envoy %d: scan %+v, json %+v", b, i, e, s)
			}
		}
	})
}
