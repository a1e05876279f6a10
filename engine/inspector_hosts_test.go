package engine

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// The runner and envoy pages in Chromium, with auth on and off: the host's fields, its
// slots over time from the charts' samples, its actors linked to their pages; a runner is
// drained from its page and shows its drain state.
func TestInspectorHostPages(t *testing.T) {
	for _, token := range []string{"tok", ""} {
		t.Run("token="+token, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e, a := sampledActor(t, ctx, token, "hosted")
			rid := waitRunnerOf(t, ctx, e, a.ActorID)
			sampled(t, ctx, e, "the runner's slot in use", func(s samples.Sample) bool { return s.Hosts[rid].Used == 1 })
			sampled(t, ctx, e, "two samples of the runner", func(s samples.Sample) bool {
				n := 0
				for _, s := range e.obs.samples.Samples() {
					if s.Hosts[rid].Total > 0 {
						n++
					}
				}
				return n >= 2
			})
			// An envoy registered in the store (no socket): its page, without actors.
			ns := defaultNS(t, e)
			if _, err := udb.Transact(ctx, e.db, func(tx udb.Transaction) (openvoy.RegisterOutput, error) {
				return openvoy.Register(ctx, tx, openvoy.RegisterInput{Namespace: ns, EnvoyKey: "env-1", PoolName: "epool", Version: 1,
					ProtocolVersion: 1, ConnID: id.New(1), NowMs: time.Now().UnixMilli()})
			}); err != nil {
				t.Fatal(err)
			}

			in := newInspector(t, ctx, e, token)
			field := func(name string) string {
				return eval[string](in, `document.querySelector('#host-fields dd[data-field="`+name+`"]').textContent`)
			}
			// From the runners list to the runner's page.
			in.open("#/runners", `document.querySelector("table#runners a.host-link")`)
			in.click("table#runners a.host-link")
			in.wait(`location.hash === "#/runner/` + rid + `" && document.querySelector("#host-fields")`)
			in.wait(`document.querySelector("table#host-actors")`)
			if field("State") != "active" || field("Slots") != "3 free of 4" || field("Drain") != "no" || !strings.HasSuffix(field("RTT"), " ms") {
				t.Errorf("runner fields: state %q slots %q drain %q rtt %q", field("State"), field("Slots"), field("Drain"), field("RTT"))
			}
			if rows := in.rows("host-actors"); len(rows) != 1 || rows[0][0] != "hosted" || rows[0][2] != "running" || rows[0][4] != a.ActorID.String() {
				t.Errorf("runner's actors: %q", rows)
			}
			if !eval[bool](in, `!!document.querySelector('#slots-chart polyline[data-series="used"]') && !!document.querySelector('#slots-chart polyline[data-series="total"]')`) {
				t.Errorf("the slots chart has no used and total lines")
			}
			if got := eval[string](in, `document.querySelector('#slots-chart .legend [data-series="used"]').textContent`); got != "used 1" {
				t.Errorf("slots legend %q, want \"used 1\"", got)
			}
			in.shot("runner")

			// The actor link goes to the actor's page.
			in.click("table#host-actors a.id")
			in.wait(`location.hash === "#/actor/` + a.ActorID.String() + `" && document.querySelector("#actor-fields")`)

			// Drain from the page: confirm, and the page shows the drain.
			in.open("#/runner/"+rid, `document.querySelector("table#host-actors")`)
			in.click("button.drain")
			in.wait(`document.querySelector("dialog#confirm[open]")`)
			in.click("dialog#confirm button.confirm")
			// (The echo runner stops its actor at once, so the runner may have stopped already.)
			in.wait(`!document.querySelector("dialog#confirm") && document.querySelector('#host-fields dd[data-field="Drain"]')?.textContent.startsWith("since ")`)
			if s := field("State"); s != "draining" && s != "stopped" {
				t.Errorf("state after the drain: %q", s)
			}

			// The envoy's page, from the envoys list.
			in.open("#/envoys", `document.querySelector("table#envoys a.host-link")`)
			in.click("table#envoys a.host-link")
			in.wait(`location.hash === "#/envoy/env-1" && document.querySelector("table#host-actors")`)
			if field("Pool") != "epool" || field("Key") != "env-1" || field("Drain") != "no" {
				t.Errorf("envoy fields: pool %q key %q drain %q", field("Pool"), field("Key"), field("Drain"))
			}
			if rows := in.rows("host-actors"); len(rows) != 1 || rows[0][0] != "none" {
				t.Errorf("envoy's actors: %q, want none", rows)
			}
			in.shot("envoy")

			// Drain the envoy from its page (berth's POST /envoys/{key}/drain).
			in.click("button.drain")
			in.wait(`document.querySelector("dialog#confirm[open]")`)
			in.shot("envoy-drain-dialog")
			in.click("dialog#confirm button.confirm")
			in.wait(`!document.querySelector("dialog#confirm") && document.querySelector('#host-fields dd[data-field="Drain"]')?.textContent.startsWith("since ")`)
			if b := eval[bool](in, `!!document.querySelector("button.drain")`); b {
				t.Errorf("a drained envoy still offers Drain")
			}
		})
	}
}

// waitRunnerOf returns the runner actor aid is placed on.
func waitRunnerOf(t *testing.T, ctx context.Context, e *Engine, aid id.ID) string {
	t.Helper()
	d, err := udb.ReadTransact(ctx, e.db, func(rt udb.ReadTransaction) (actor.Detail, error) {
		d, _, err := actor.Inspect(ctx, rt, aid, 0)
		return d, err
	})
	if err != nil || !d.Placed || d.Host.RunnerID == (id.ID{}) {
		t.Fatalf("actor %s is not on a runner: %+v %v", aid, d, err)
	}
	return d.Host.RunnerID.String()
}

// /ui/host-actors refuses a malformed runner id and a request naming no host (400
// api.bad_request); an unknown runner has no actors.
func TestInspectorHostActorsInput(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/ui/host-actors?runner_id=nope", "/ui/host-actors", "/ui/host-actors?envoy_key=env-1"} {
		if rep := call(t, client, e.PublicAddr(), path, "tok"); rep.status != 400 || rep.header.Get("x-rivet-error") != "api.bad_request" {
			t.Errorf("%s: %d %s", path, rep.status, rep.body)
		}
	}
	rep := call(t, client, e.PublicAddr(), "/ui/host-actors?runner_id="+id.New(1).String(), "tok")
	if rep.status != 200 || strings.TrimSpace(rep.body) != `{"actors":[],"more":false}` {
		t.Errorf("unknown runner: %d %s", rep.status, rep.body)
	}
}
