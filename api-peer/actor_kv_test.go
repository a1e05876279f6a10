package apipeer

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// seedActorKV creates an actor in namespace ns of p's store with the given KV entries.
func seedActorKV(t *testing.T, p *peer, ns id.ID, nowMs int64, kv map[string]string) id.ID {
	t.Helper()
	aid := id.New(1)
	in := actorkv.PutInput{ActorID: aid, Version: []byte("test"), NowMs: nowMs}
	for k, v := range kv {
		in.Keys, in.Values = append(in.Keys, []byte(k)), append(in.Values, []byte(v))
	}
	err := udb.Update(bg, p.db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorNamespaceIDKey{ActorID: aid}, ns)
		return actorkv.Put(bg, tx, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	return aid
}

func TestActorKVGet(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	aid := seedActorKV(t, p, p.defNsID, 1234, map[string]string{"state": "hello", "\xff\xff": "slashes", "empty": ""})
	path := func(aid id.ID, key string) string {
		return "/actors/" + aid.String() + "/kv/keys/" + key + "?namespace=default"
	}
	std := func(k string) string { return url.PathEscape(base64.StdEncoding.EncodeToString([]byte(k))) }
	tests := []struct {
		name, target, value string
	}{
		{"standard base64", path(aid, std("state")), "hello"},
		{"a key whose base64 has a slash (%2F)", path(aid, std("\xff\xff")), "slashes"},
		{"URL-safe alphabet", path(aid, base64.URLEncoding.EncodeToString([]byte("\xff\xff"))), "slashes"},
		{"no padding", path(aid, base64.RawStdEncoding.EncodeToString([]byte("state"))), "hello"},
		{"empty value", path(aid, std("empty")), ""},
	}
	for _, tt := range tests {
		var out apitypes.ActorsKVGetResponse
		decode(t, do(t, p.h, "GET", tt.target, "", false), &out)
		if out.UpdateTs != 1234 || out.Value != base64.StdEncoding.EncodeToString([]byte(tt.value)) {
			t.Errorf("%s: %+v, want value %q at 1234", tt.name, out, tt.value)
		}
	}
}

func TestActorKVGetErrors(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	aid := seedActorKV(t, p, p.defNsID, 1, map[string]string{"k": "v"})
	elsewhere := seedActorKV(t, p, id.New(1), 1, map[string]string{"k": "v"}) // another namespace
	k := base64.StdEncoding.EncodeToString([]byte("k"))
	long := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", actorkv.MaxKeySize-1)))
	tests := []struct {
		target     string
		status     int
		key, field string
		unchecked  bool // a request the contract rejects
	}{
		{"/actors/" + aid.String() + "/kv/keys/" + base64.StdEncoding.EncodeToString([]byte("nope")) + "?namespace=default", 404, "actor.kv_key_not_found", "", false},
		{"/actors/" + id.New(1).String() + "/kv/keys/" + k + "?namespace=default", 404, "actor.not_found", "", false},
		{"/actors/" + elsewhere.String() + "/kv/keys/" + k + "?namespace=default", 404, "actor.not_found", "", false},
		{"/actors/" + aid.String() + "/kv/keys/" + k + "?namespace=nope", 404, "namespace.not_found", "", false},
		{"/actors/" + aid.String() + "/kv/keys/" + k, 400, "api.bad_request", "namespace", true},
		{"/actors/" + aid.String() + "/kv/keys/" + k + "?namespace=default&x=1", 400, "api.bad_request", "x", true},
		{"/actors/xyz/kv/keys/" + k + "?namespace=default", 400, "api.bad_request", "actor_id", true},
		{"/actors/" + aid.String() + "/kv/keys/a$b?namespace=default", 400, "api.bad_request", "key", false},
		{"/actors/" + aid.String() + "/kv/keys/" + long + "?namespace=default", 400, "validation.invalid_input", "", false},
	}
	for _, tt := range tests {
		a := do(t, p.h, "GET", tt.target, "", tt.unchecked)
		key, field := errKey(t, a)
		if a.status != tt.status || key != tt.key || field != tt.field {
			t.Errorf("GET %s: %d %s (field %q), want %d %s (field %q)", tt.target, a.status, key, field, tt.status, tt.key, tt.field)
		}
	}
}
