package security

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/tlstest"
	"github.com/berthhq/berth/tests/internal/harness"
)

// Two datacenters whose api-peers require client certificates of their authority (mutual
// TLS): api-public in the first lists and reads an actor of the second over mTLS, with the
// admin token and with a namespace's read token (both datacenters share the tokens file,
// and the second checks the token the first forwards).
func TestTwoDatacentersOverMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "berth-dcs")
	file := filepath.Join(t.TempDir(), "tokens.json")
	readTok := auth.NewToken()
	if err := auth.WriteFile(file, auth.File{Tokens: []auth.Entry{
		{ID: "default-read", Namespace: "default", Role: auth.RoleRead, SHA256: auth.Hash(readTok)},
	}}); err != nil {
		t.Fatal(err)
	}
	second := harness.FreePorts(t, 2) // the second datacenter's guard and api-peer ports
	secondDC := map[string]any{"datacenter_label": 2, "is_leader": false,
		"public_url": fmt.Sprintf("https://127.0.0.1:%d", second[0]), "peer_url": fmt.Sprintf("https://127.0.0.1:%d", second[1])}
	var firstDC map[string]any
	common := func(cfg map[string]any) {
		cfg["auth"].(map[string]any)["tokens_file"] = file
		cfg["api_peer"].(map[string]any)["tls"].(map[string]any)["client_auth"] = true
	}
	first := harness.StartEngine(t, harness.Settings{TLS: ca, AdminToken: adminToken, Configure: func(cfg map[string]any) {
		common(cfg)
		dcs := cfg["topology"].(map[string]any)["datacenters"].(map[string]any)
		firstDC = dcs["default"].(map[string]any)
		dcs["second"] = secondDC
	}})
	other := harness.StartEngine(t, harness.Settings{TLS: ca, AdminToken: adminToken, Ports: second, Configure: func(cfg map[string]any) {
		common(cfg)
		cfg["topology"] = map[string]any{"datacenter_label": 2, "datacenters": map[string]any{"default": firstDC, "second": secondDC}}
	}})

	var created struct {
		Actor struct {
			ActorID    string `json:"actor_id"`
			Datacenter string `json:"datacenter"`
		} `json:"actor"`
	}
	other.CallJSON(t, http.MethodPut, "/runner-configs/pool?namespace=default",
		map[string]any{"datacenters": map[string]any{"second": map[string]any{"normal": map[string]any{}}}}, nil)
	other.CallJSON(t, http.MethodPost, "/actors?namespace=default", map[string]any{"name": "far", "runner_name_selector": "pool", "crash_policy": "sleep"}, &created)
	if created.Actor.Datacenter != "second" {
		t.Fatalf("created in %q, want the second datacenter", created.Actor.Datacenter)
	}
	aid := created.Actor.ActorID
	type listed struct {
		ActorID string `json:"actor_id"`
	}
	for _, token := range []string{adminToken, readTok} {
		first.Token = token
		var list struct{ Actors []listed }
		first.GetJSON(t, "/actors?namespace=default&name=far", &list) // a fan-out to both api-peers
		if !slices.Contains(list.Actors, listed{aid}) {
			t.Errorf("the first datacenter's list (token %.6s…) lacks the second's actor: %+v", token, list)
		}
		first.GetJSON(t, "/actors?namespace=default&actor_ids="+aid, &list) // forwarded by the id's label
		if len(list.Actors) != 1 || list.Actors[0].ActorID != aid {
			t.Errorf("the second's actor by id through the first (token %.6s…): %+v", token, list)
		}
	}
}
