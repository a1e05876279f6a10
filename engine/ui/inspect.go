package ui

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Bounds of the actor page's reads.
const (
	maxSockets      = 100     // hibernating WebSockets listed
	defaultKVLimit  = 50      // KV entries per page
	maxKVLimit      = 200     // KV entries per page at most
	maxValuePreview = 1 << 10 // bytes of each value sent; value_size says the full size
)

// scope is the namespace a request's grant is limited to, or the zero id for a global one.
func scope(r *http.Request, o Options) (id.ID, error) {
	g := auth.FromContext(r.Context())
	if g.Global() {
		return id.ID{}, nil
	}
	ns, err := o.ResolveNamespace(r.Context(), g.Namespace)
	return ns.NamespaceID, err
}

// visible reports whether actor aid exists and the scope (zero: any) may see it.
func visible(ctx context.Context, rt udb.ReadTransaction, aid, scope id.ID) (bool, error) {
	ns, found, err := actor.NamespaceOf(ctx, rt.Snapshot(), aid)
	return found && (scope == id.ID{} || ns == scope), err
}

// actorParam is the request's actor_id: an actor of this datacenter, else an error.
func actorParam(r *http.Request, o Options) (id.ID, *rerr.Error) {
	aid, err := id.Parse(r.URL.Query().Get("actor_id"))
	if err != nil {
		return id.ID{}, rerr.BadRequest("actor_id", err.Error())
	}
	if aid.Label() != o.Label {
		return id.ID{}, rerr.ActorNotFound(aid.String())
	}
	return aid, nil
}

// readActor reads, in one read transaction, what read returns of the request's actor
// (actor_id): one of this datacenter's that the grant may see. Otherwise it answers the
// error itself (400 for a malformed id, 404 actor.not_found) and returns ok false.
func readActor[T any](w http.ResponseWriter, r *http.Request, o Options, read func(udb.ReadTransaction, id.ID) (T, error)) (aid id.ID, v T, ok bool) {
	aid, bad := actorParam(r, o)
	if bad != nil {
		writeError(w, r, bad)
		return aid, v, false
	}
	sc, err := scope(r, o)
	if err != nil {
		fail(w, r, "resolving the namespace", err)
		return aid, v, false
	}
	type result struct {
		v  T
		ok bool
	}
	res, err := udb.ReadTransact(r.Context(), o.DB, func(rt udb.ReadTransaction) (result, error) {
		if ok, err := visible(r.Context(), rt, aid, sc); !ok || err != nil {
			return result{}, err
		}
		v, err := read(rt, aid)
		return result{v, true}, err
	})
	switch {
	case err != nil:
		fail(w, r, "reading an actor", err)
	case !res.ok:
		writeError(w, r, rerr.ActorNotFound(aid.String()))
	}
	return aid, res.v, err == nil && res.ok
}

// fail answers err as a client may see it (rerr.Public), logging an internal one.
func fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	e := rerr.Public(err)
	if e.Status >= 500 {
		apihttp.Logger(r.Context()).ErrorContext(r.Context(), "dashboard: "+what+" failed", slog.Any("error", err))
	}
	writeError(w, r, e)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// actorDetail is the body of /ui/actor-detail.
type actorDetail struct {
	State       string        `json:"state"`
	Generation  uint32        `json:"generation"`
	RunnerID    *string       `json:"runner_id"`
	EnvoyKey    *string       `json:"envoy_key"`
	AlarmTs     *int64        `json:"alarm_ts"`
	RetryCount  uint32        `json:"retry_count"`
	WillWake    bool          `json:"will_wake"`
	Hibernating []hibernating `json:"hibernating"`
	// History is its latest lifecycle transitions, oldest first.
	History []keys.ActorHistoryEvent `json:"history"`
}

type hibernating struct {
	GatewayID   string `json:"gateway_id"` // hex
	RequestID   string `json:"request_id"` // hex
	KeepaliveTs int64  `json:"keepalive_ts"`
}

// serveActorDetail answers GET /ui/actor-detail?actor_id=: what the actor page shows beyond
// the public actor object, for an actor of this datacenter.
func serveActorDetail(w http.ResponseWriter, r *http.Request, o Options) {
	type result struct {
		d       actor.Detail
		history []keys.ActorHistoryEvent
	}
	_, res, ok := readActor(w, r, o, func(rt udb.ReadTransaction, aid id.ID) (result, error) {
		d, _, err := actor.Inspect(r.Context(), rt, aid, maxSockets)
		if err != nil {
			return result{}, err
		}
		h, err := actor.History(r.Context(), rt, aid)
		return result{d, h}, err
	})
	if !ok {
		return
	}
	d := res.d
	out := actorDetail{State: string(d.Phase), Generation: d.Generation, AlarmTs: d.AlarmTs, RetryCount: d.RetryCount,
		WillWake: d.WillWake, Hibernating: []hibernating{}, History: res.history}
	if d.Placed {
		if d.Host.RunnerID == (id.ID{}) {
			out.EnvoyKey = &d.Host.EnvoyKey
		} else {
			s := d.Host.RunnerID.String()
			out.RunnerID = &s
		}
	}
	for _, h := range d.Hibernating {
		out.Hibernating = append(out.Hibernating, hibernating{GatewayID: hex.EncodeToString(h.GatewayID[:]),
			RequestID: hex.EncodeToString(h.RequestID[:]), KeepaliveTs: h.KeepaliveMs})
	}
	writeJSON(w, out)
}

// kvEntry is one entry of /ui/actor-kv: key and value in standard base64, the value cut to
// maxValuePreview bytes.
type kvEntry struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	ValueSize int    `json:"value_size"`
	Truncated bool   `json:"truncated"`
	UpdateTs  int64  `json:"update_ts"`
}

// kvPage is the body of /ui/actor-kv; cursor (the last key, base64) is null after the last page.
type kvPage struct {
	Entries []kvEntry `json:"entries"`
	Cursor  *string   `json:"cursor"`
}

// serveActorKV answers GET /ui/actor-kv?actor_id=&prefix=&cursor=&limit=: a page of an
// actor's KV entries in key order, those starting with prefix (base64) after the key cursor
// (base64).
func serveActorKV(w http.ResponseWriter, r *http.Request, o Options) {
	q := r.URL.Query()
	var in actorkv.ListPrefixAfter
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"prefix", &in.Prefix}, {"cursor", &in.After}} {
		b, err := apitypes.DecodeKVKey(q.Get(f.name))
		if err != nil {
			writeError(w, r, rerr.BadRequest(f.name, "not base64"))
			return
		}
		*f.dst = b
	}
	limit := uint64(defaultKVLimit)
	if s := q.Get("limit"); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil || n == 0 || n > maxKVLimit {
			writeError(w, r, rerr.BadRequest("limit", "an integer from 1 to 200"))
			return
		}
		limit = n
	}
	_, entries, ok := readActor(w, r, o, func(rt udb.ReadTransaction, aid id.ID) ([]actorkv.Entry, error) {
		return actorkv.List(r.Context(), rt.Snapshot(), actorkv.ListInput{ActorID: aid, Query: in, Limit: &limit})
	})
	if !ok {
		return
	}
	out := kvPage{Entries: make([]kvEntry, 0, len(entries))}
	for _, e := range entries {
		v := e.Value[:min(len(e.Value), maxValuePreview)]
		out.Entries = append(out.Entries, kvEntry{Key: base64.StdEncoding.EncodeToString(e.Key), Value: base64.StdEncoding.EncodeToString(v),
			ValueSize: len(e.Value), Truncated: len(v) < len(e.Value), UpdateTs: e.Metadata.UpdateTs})
	}
	if n := len(entries); uint64(n) == limit {
		c := base64.StdEncoding.EncodeToString(entries[n-1].Key)
		out.Cursor = &c
	}
	writeJSON(w, out)
}
