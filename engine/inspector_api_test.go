package engine

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	opsqlite "github.com/berthhq/berth/ops/sqlite"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// inspectedActor starts a runner and an actor on it, with KV entries (one binary, one of
// 2,000 bytes) and a hibernating WebSocket.
func inspectedActor(t *testing.T, ctx context.Context, e *Engine) actor.Actor {
	t.Helper()
	r := newEchoRunner(t, ctx, e)
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: "inspected", Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts
	_, err = udb.Transact(ctx, e.db, func(tx udb.Transaction) (struct{}, error) {
		actor.SetHibernating(tx, actor.HibernatingInput{ActorID: a.ActorID, GatewayID: [4]byte{1, 2, 3, 4}, RequestID: [4]byte{0xa, 0xb, 0xc, 0xd}, NowMs: time.Now().UnixMilli()})
		return struct{}{}, actorkv.Put(ctx, tx, actorkv.PutInput{ActorID: a.ActorID, NowMs: 1700000000000,
			Keys:   [][]byte{[]byte("a"), []byte("b"), []byte("big"), []byte("bin\xff\x00"), []byte("c")},
			Values: [][]byte{[]byte("1"), []byte("2"), []byte(strings.Repeat("x", 2000)), {0, 1, 2}, []byte("héllo")}})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Its SQLite database, written as its host would: 120 rows, a blob, a long text.
	host := opsqlite.Fence{ActorID: a.ActorID, Host: func(context.Context, udb.ReadTransaction, keys.ActorState) error { return nil }}
	_, err = (&opsqlite.Store{DB: e.db}).Exec(ctx, opsqlite.ExecInput{Fence: host, Script: `
		CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
		CREATE TABLE "odd ""name""" (v);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120)
		INSERT INTO items SELECT i, 'item ' || i, x'00ff' FROM n;
		UPDATE items SET name = printf('%.600c', 'y') WHERE id = 7;`})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The actor page's endpoints: /ui/actor-detail reports the host, alarm and hibernating
// WebSockets; /ui/actor-kv pages the KV entries by cursor and prefix, cutting long values;
// bad input is a {group, code, message} error.
func TestInspectorActorEndpoints(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := inspectedActor(t, ctx, e)
	aid := a.ActorID.String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path string, out any) reply {
		t.Helper()
		rep := call(t, client, e.PublicAddr(), path, "tok")
		if out != nil && rep.status == 200 {
			if err := json.Unmarshal([]byte(rep.body), out); err != nil {
				t.Fatalf("%s: %v in %q", path, err, rep.body)
			}
		}
		return rep
	}
	b64 := func(s string) string { return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))) }

	var d struct {
		State       string  `json:"state"`
		RunnerID    *string `json:"runner_id"`
		AlarmTs     *int64  `json:"alarm_ts"`
		Hibernating []struct {
			GatewayID string `json:"gateway_id"`
			RequestID string `json:"request_id"`
		} `json:"hibernating"`
		History []struct {
			Seq        uint64  `json:"seq"`
			Kind       string  `json:"kind"`
			Generation uint32  `json:"generation"`
			RunnerID   *string `json:"runner_id"`
		} `json:"history"`
	}
	if rep := get("/ui/actor-detail?actor_id="+aid, &d); rep.status != 200 || d.State != "running" || d.RunnerID == nil || d.AlarmTs != nil ||
		len(d.Hibernating) != 1 || d.Hibernating[0].GatewayID != "01020304" || d.Hibernating[0].RequestID != "0a0b0c0d" {
		t.Errorf("actor-detail: %d %s", rep.status, rep.body)
	}
	var kinds []string
	for i, ev := range d.History {
		kinds = append(kinds, ev.Kind)
		if ev.Seq != uint64(i) || ev.Generation != 0 || (ev.Kind != "created" && (ev.RunnerID == nil || *ev.RunnerID != *d.RunnerID)) {
			t.Errorf("history event %d: %+v", i, ev)
		}
	}
	if strings.Join(kinds, ",") != "created,placed,running" {
		t.Errorf("history: %q, want created, placed, running", kinds)
	}

	type page struct {
		Entries []struct {
			Key, Value string
			ValueSize  int  `json:"value_size"`
			Truncated  bool `json:"truncated"`
			UpdateTs   int64
		}
		Cursor *string
	}
	keysOf := func(p page) (out []string) {
		for _, e := range p.Entries {
			k, _ := base64.StdEncoding.DecodeString(e.Key)
			out = append(out, string(k))
		}
		return out
	}
	var p1, p2, p3, pre page
	get("/ui/actor-kv?limit=2&actor_id="+aid, &p1)
	if got := keysOf(p1); strings.Join(got, ",") != "a,b" || p1.Cursor == nil {
		t.Fatalf("first page: %q, cursor %v", got, p1.Cursor)
	}
	get("/ui/actor-kv?limit=2&actor_id="+aid+"&cursor="+url.QueryEscape(*p1.Cursor), &p2)
	if got := keysOf(p2); strings.Join(got, ",") != "big,bin\xff\x00" || p2.Cursor == nil {
		t.Fatalf("second page: %q", got)
	}
	if big := p2.Entries[0]; !big.Truncated || big.ValueSize != 2000 || len(big.Value) != base64.StdEncoding.EncodedLen(1024) {
		t.Errorf("a 2,000-byte value: truncated %v, size %d, %d base64 chars", big.Truncated, big.ValueSize, len(big.Value))
	}
	get("/ui/actor-kv?limit=2&actor_id="+aid+"&cursor="+url.QueryEscape(*p2.Cursor), &p3)
	if got := keysOf(p3); strings.Join(got, ",") != "c" || p3.Cursor != nil || p3.Entries[0].Truncated {
		t.Errorf("last page: %q, cursor %v", got, p3.Cursor)
	}
	get("/ui/actor-kv?actor_id="+aid+"&prefix="+b64("bi"), &pre)
	if got := keysOf(pre); strings.Join(got, ",") != "big,bin\xff\x00" || pre.Cursor != nil {
		t.Errorf("prefix bi: %q", got)
	}

	type sqlPage struct {
		Tables []struct{ Name, SQL string }
		Table  string
		Rows   [][]any
		Next   *int
	}
	var tables, rows1, rows3 sqlPage
	get("/ui/actor-sqlite?actor_id="+aid, &tables)
	if len(tables.Tables) != 2 || tables.Tables[0].Name != "items" || tables.Tables[1].Name != `odd "name"` || tables.Rows != nil {
		t.Errorf("sqlite tables: %+v", tables)
	}
	get("/ui/actor-sqlite?actor_id="+aid+"&table=items", &rows1)
	if len(rows1.Rows) != 50 || rows1.Next == nil || *rows1.Next != 50 || rows1.Rows[0][1] != "item 1" {
		t.Fatalf("sqlite first page: %d rows, next %v", len(rows1.Rows), rows1.Next)
	}
	if long, ok := rows1.Rows[6][1].(map[string]any); !ok || long["cut"] != true || len(long["text"].(string)) != 256 {
		t.Errorf("a 600-byte text cell: %v", rows1.Rows[6][1])
	}
	if blob, ok := rows1.Rows[0][2].(map[string]any); !ok || blob["base64"] != "AP8=" {
		t.Errorf("a blob cell: %v", rows1.Rows[0][2])
	}
	get("/ui/actor-sqlite?actor_id="+aid+"&table=items&offset=100&limit=200", &rows3)
	if len(rows3.Rows) != 20 || rows3.Next != nil || rows3.Rows[19][0] != float64(120) {
		t.Errorf("sqlite last page: %d rows, next %v", len(rows3.Rows), rows3.Next)
	}
	var odd sqlPage
	if rep := get("/ui/actor-sqlite?actor_id="+aid+"&table="+url.QueryEscape(`odd "name"`), &odd); rep.status != 200 || odd.Table != `odd "name"` {
		t.Errorf("a table with a quote in its name: %d %s", rep.status, rep.body)
	}

	// The live request log: events "ready", then one "request" per gateway request.
	sreq, _ := http.NewRequestWithContext(ctx, "GET", "http://"+e.PublicAddr().String()+"/ui/actor-requests?actor_id="+aid, nil)
	sreq.Header.Set("Authorization", "Bearer tok")
	stream, err := client.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	next := func() (event, data string) {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			switch line = strings.TrimSuffix(line, "\n"); {
			case strings.HasPrefix(line, "event: "):
				event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			case line == "" && event != "":
				return event, data
			}
		}
	}
	if ev, _ := next(); stream.StatusCode != 200 || stream.Header.Get("Content-Type") != "text/event-stream" || ev != "ready" {
		t.Fatalf("stream: %d %s, first event %q", stream.StatusCode, stream.Header.Get("Content-Type"), ev)
	}
	gw, err := client.Post("http://"+e.PublicAddr().String()+"/gateway/"+aid+"/echo?q=1", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	gw.Body.Close()
	ev, data := next()
	var entry struct {
		Method, Path string
		Status       int
		LatencyMs    float64 `json:"latency_ms"`
	}
	if err := json.Unmarshal([]byte(data), &entry); ev != "request" || err != nil || entry.Method != "POST" || entry.Path != "/echo?q=1" ||
		entry.Status != gw.StatusCode || entry.LatencyMs <= 0 {
		t.Errorf("request event: %s %s (the gateway answered %d)", ev, data, gw.StatusCode)
	}
	// A WebSocket is logged when it ends, with 101 and how long it was open.
	ws, _, err := websocket.Dial(ctx, "ws://"+e.PublicAddr().String()+"/gateway/"+aid+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := ws.Read(ctx); err != nil || string(b) != "hi" {
		t.Fatalf("echo: %q %v", b, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	ev, data = next()
	if err := json.Unmarshal([]byte(data), &entry); ev != "request" || err != nil || entry.Method != "GET" || entry.Path != "/ws" ||
		entry.Status != http.StatusSwitchingProtocols || entry.LatencyMs <= 0 {
		t.Errorf("WebSocket event: %s %s", ev, data)
	}

	other := id.New(a.ActorID.Label() + 1).String()
	for _, tc := range []struct {
		path   string
		status int
		key    string
	}{
		{"/ui/actor-detail?actor_id=nope", 400, "api.bad_request"},
		{"/ui/actor-detail", 400, "api.bad_request"},
		{"/ui/actor-detail?actor_id=" + other, 404, "actor.not_found"},
		{"/ui/actor-detail?actor_id=" + id.New(a.ActorID.Label()).String(), 404, "actor.not_found"},
		{"/ui/actor-kv?actor_id=" + other, 404, "actor.not_found"},
		{"/ui/actor-kv?actor_id=" + aid + "&prefix=%21%21", 400, "api.bad_request"},
		{"/ui/actor-kv?actor_id=" + aid + "&cursor=%21%21", 400, "api.bad_request"},
		{"/ui/actor-kv?actor_id=" + aid + "&limit=0", 400, "api.bad_request"},
		{"/ui/actor-kv?actor_id=" + aid + "&limit=201", 400, "api.bad_request"},
		{"/ui/actor-kv?actor_id=" + aid + "&limit=x", 400, "api.bad_request"},
		{"/ui/actor-kv?actor_id=" + aid + "&prefix=" + b64(strings.Repeat("k", 2047)), 400, "validation.invalid_input"},
		{"/ui/actor-sqlite?actor_id=" + other, 404, "actor.not_found"},
		{"/ui/actor-requests?actor_id=nope", 400, "api.bad_request"},
		{"/ui/actor-requests?actor_id=" + other, 404, "actor.not_found"},
		{"/ui/actor-sqlite?actor_id=" + aid + "&table=nope", 400, "api.bad_request"},
		{"/ui/actor-sqlite?actor_id=" + aid + "&table=" + url.QueryEscape(`items" --`), 400, "api.bad_request"},
		{"/ui/actor-sqlite?actor_id=" + aid + "&table=items&limit=0", 400, "api.bad_request"},
		{"/ui/actor-sqlite?actor_id=" + aid + "&table=items&limit=201", 400, "api.bad_request"},
		{"/ui/actor-sqlite?actor_id=" + aid + "&offset=-1", 400, "api.bad_request"},
	} {
		rep := get(tc.path, nil)
		var body struct{ Group, Code, Message string }
		if rep.status != tc.status || json.Unmarshal([]byte(rep.body), &body) != nil || body.Group+"."+body.Code != tc.key || body.Message == "" {
			t.Errorf("GET %s: %d %s; want %d %s", tc.path, rep.status, rep.body, tc.status, tc.key)
		}
	}
	if rep := call(t, client, e.PublicAddr(), "/ui/actor-kv?actor_id="+aid, ""); rep.status != 401 {
		t.Errorf("actor-kv without a token: %d", rep.status)
	}
}
