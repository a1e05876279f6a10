package apipublic

import (
	"encoding/base64"
	"net/url"
	"testing"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// seedActorKV creates an actor of datacenter dc (its id carries dc's label) in the default
// namespace, with one KV entry.
func (c *cluster) seedActorKV(t *testing.T, dc string, key, value string) id.ID {
	t.Helper()
	var label uint16
	for _, d := range c.topo.Datacenters {
		if d.Name == dc {
			label = d.Label
		}
	}
	aid := id.New(label)
	err := udb.Update(bg, c.dbs[dc], func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorNamespaceIDKey{ActorID: aid}, c.nsID)
		return actorkv.Put(bg, tx, actorkv.PutInput{ActorID: aid, Keys: [][]byte{[]byte(key)}, Values: [][]byte{[]byte(value)}, NowMs: 77})
	})
	if err != nil {
		t.Fatal(err)
	}
	return aid
}

// TestActorKVRoutedByLabel: the read goes to the datacenter of the actor id's label, the
// local one in process, and a key whose base64 has a "/" survives the forwarding.
func TestActorKVRoutedByLabel(t *testing.T) {
	c := newCluster(t, hangMargin)
	for _, dc := range []string{"a", "b", "c"} {
		aid := c.seedActorKV(t, dc, "\xff\xfe"+dc, "value in "+dc)
		target := "/actors/" + aid.String() + "/kv/keys/" + url.PathEscape(base64.StdEncoding.EncodeToString([]byte("\xff\xfe"+dc))) + "?namespace=default"
		for _, h := range []struct {
			name string
			pub  func() answer
		}{
			{"public API with a store", func() answer { return c.do(t, "GET", target, "") }},
			{"public API without a store", func() answer { return c.doWith(t, c.pubPeer, "GET", target, "") }},
		} {
			var out apitypes.ActorsKVGetResponse
			decode(t, h.pub(), &out)
			if out.Value != base64.StdEncoding.EncodeToString([]byte("value in "+dc)) || out.UpdateTs != 77 {
				t.Errorf("%s, actor in %s: %+v", h.name, dc, out)
			}
		}
		// The other datacenters do not have the actor: its label decides.
		missing := c.do(t, "GET", "/actors/"+aid.String()+"/kv/keys/"+base64.StdEncoding.EncodeToString([]byte("nope"))+"?namespace=default", "")
		if e := parseErr(t, missing); missing.status != 404 || e.Key() != "actor.kv_key_not_found" {
			t.Errorf("missing key in %s: %d %s", dc, missing.status, missing.body)
		}
	}
	// A label of no datacenter.
	a := c.do(t, "GET", "/actors/"+id.New(9).String()+"/kv/keys/YQ==?namespace=default", "")
	if e := parseErr(t, a); a.status != 404 || e.Key() != "actor.not_found" {
		t.Errorf("unknown label: %d %s", a.status, a.body)
	}
	// Bad input is refused before forwarding.
	a = c.do(t, "GET", "/actors/"+id.New(3).String()+"/kv/keys/a$b?namespace=default", "")
	if e := parseErr(t, a); a.status != 400 || e.Key() != "api.bad_request" || e.Metadata["field"] != "key" {
		t.Errorf("bad key: %d %s", a.status, a.body)
	}
}
