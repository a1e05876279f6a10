package apipeer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/ops/keyres"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

// TestKeyRoutes calls the internal key routes of a leader and of another datacenter through
// KeyClient and directly: reservations, releases and fences work with the admin token, are
// refused to a scoped admin token, and reservations are refused outside the leader.
func TestKeyRoutes(t *testing.T) {
	ctx := context.Background()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	scoped := auth.NewToken()
	if err := auth.WriteFile(tokens, auth.File{Tokens: []auth.Entry{{ID: "ns-admin", Namespace: "default", Role: auth.RoleAdmin, SHA256: auth.Hash(scoped)}}}); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.Options{AdminToken: "tok", TokensFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	dbs := map[uint16]udb.Database{}
	servers := map[uint16]*httptest.Server{}
	topo := apihttp.Topology{}
	for _, label := range []uint16{1, 2} {
		db, err := udb.Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[label] = db
		servers[label] = httptest.NewUnstartedServer(nil)
		topo.Datacenters = append(topo.Datacenters, apihttp.Datacenter{Name: map[uint16]string{1: "a", 2: "b"}[label], Label: label,
			IsLeader: label == 1, PeerURL: "http://" + servers[label].Listener.Addr().String()})
	}
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Token: "tok"})
	t.Cleanup(peers.Close)
	clients := map[uint16]*KeyClient{}
	for label, srv := range servers {
		local := topo
		local.Local = label
		srv.Config.Handler = New(Deps{DB: dbs[label], Topology: local, Peers: peers, Auth: authn}).Handler()
		srv.Start()
		t.Cleanup(srv.Close)
		clients[label] = &KeyClient{DB: dbs[label], Topology: local, Peers: peers}
	}

	k := keyres.Key{Namespace: id.New(1), Name: "room", Key: "k"}
	mine, theirs := id.New(2), id.New(1)
	// From b, through the leader's route: the first reservation wins, the second sees it.
	for _, c := range []struct {
		aid  id.ID
		want id.ID
	}{{mine, mine}, {theirs, mine}} {
		hs, err := clients[2].Replace(ctx, []keyres.Request{{Key: k, Candidate: keyres.Holder{ActorID: c.aid, ReservedAtMs: 5}}})
		if err != nil || len(hs) != 1 || hs[0].ActorID != c.want {
			t.Fatalf("reserve for %v: %+v %v", c.aid, hs, err)
		}
	}
	// From a, in its own store: the same reservation.
	if hs, err := clients[1].Replace(ctx, []keyres.Request{{Key: k, Candidate: keyres.Holder{ActorID: theirs, ReservedAtMs: 6}}}); err != nil || hs[0].ActorID != mine {
		t.Fatalf("reserve at the leader: %+v %v", hs, err)
	}
	// mine (an id of b) was never created: from a, fenced in b.
	if l, _, err := clients[1].Find(ctx, mine, false); err != nil || l != keyres.Absent {
		t.Fatalf("look: %s %v", l, err)
	}
	if l, _, err := clients[1].Find(ctx, mine, true); err != nil || l != keyres.Absent {
		t.Fatalf("fence: %s %v", l, err)
	}
	if hs, err := clients[2].Replace(ctx, []keyres.Request{{Key: k, Expect: mine, Candidate: keyres.Holder{ActorID: theirs, ReservedAtMs: 7}}}); err != nil || hs[0].ActorID != theirs {
		t.Fatalf("replace: %+v %v", hs, err)
	}
	if err := clients[2].Release(ctx, []keyres.Request{{Key: k, Expect: theirs}}); err != nil {
		t.Fatal(err)
	}
	if hs, err := clients[2].Replace(ctx, []keyres.Request{{Key: k, Candidate: keyres.Holder{ActorID: mine, ReservedAtMs: 8}}}); err != nil || hs[0].ActorID != mine {
		t.Fatalf("reserve after the release: %+v %v", hs, err)
	}
	for _, label := range []uint16{1, 2} {
		if h, found, err := clients[label].Holder(ctx, k); err != nil || !found || h.ActorID != mine {
			t.Fatalf("holder from %d: %+v %v %v", label, h, found, err)
		}
	}
	if _, found, err := clients[2].Holder(ctx, keyres.Key{Namespace: k.Namespace, Name: "room", Key: "free"}); err != nil || found {
		t.Fatalf("holder of a free key: %v %v", found, err)
	}

	post := func(label uint16, path, token string, body any) (int, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, servers[label].URL+path, strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	reserve := fromRequests([]keyres.Request{{Key: k, Candidate: keyres.Holder{ActorID: theirs, ReservedAtMs: 9}}})
	for _, c := range []struct {
		label       uint16
		path, token string
		body        any
		status      int
		code        string
	}{
		{1, "/internal/keys/reserve", scoped, reserve, 403, "forbidden"},
		{1, "/internal/keys/release", scoped, reserve, 403, "forbidden"},
		{2, "/internal/keys/find", scoped, findRequest{ActorID: mine}, 403, "forbidden"},
		{2, "/internal/keys/reserve", "tok", reserve, 421, "not_leader"},
		{2, "/internal/keys/holder", "tok", reserve.Keys[0], 421, "not_leader"},
		{1, "/internal/keys/holder", scoped, reserve.Keys[0], 403, "forbidden"},
		{1, "/internal/keys/find", "tok", findRequest{ActorID: mine}, 400, "bad_request"},
		{1, "/internal/keys/release", "tok", reserve, 400, "bad_request"}, // no expect_actor_id
		{1, "/internal/keys/reserve", "tok", reserve, 200, ""},
		{2, "/internal/pools/capacity", scoped, capacityRequest{NamespaceID: k.Namespace, Pool: "pool"}, 403, "forbidden"},
		{2, "/internal/pools/capacity", "tok", capacityRequest{NamespaceID: k.Namespace}, 400, "bad_request"}, // no pool
	} {
		status, body := post(c.label, c.path, c.token, c.body)
		if status != c.status || !strings.Contains(body, c.code) {
			t.Errorf("POST %s on %d: %d %s, want %d %s", c.path, c.label, status, body, c.status, c.code)
		}
	}
}
