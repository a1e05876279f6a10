package engine

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/ops/actor"
)

// startSampledEngine is startEngine with the census and the charts' sampler every 50 ms,
// auth on (admin token "tok") or, with token "", off.
func startSampledEngine(t *testing.T, token string) *Engine {
	t.Helper()
	cfg := testConfig(token)
	cfg.Auth.AllowAnonymous = token == ""
	return startEngineOpts(t, Options{Config: cfg,
		Observability: ObservabilityOptions{CensusInterval: 50 * time.Millisecond, SampleInterval: 50 * time.Millisecond}})
}

// sampledActor starts a sampled engine (startSampledEngine), an echo runner and an actor
// named name running on it.
func sampledActor(t *testing.T, ctx context.Context, token, name string) (*Engine, actor.Actor) {
	t.Helper()
	e := startSampledEngine(t, token)
	r := newEchoRunner(t, ctx, e)
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: name, Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts
	return e, a
}

// sampled waits until one of e's samples satisfies ok, checking at each new sample.
func sampled(t *testing.T, ctx context.Context, e *Engine, what string, ok func(samples.Sample) bool) {
	t.Helper()
	tick := time.NewTicker(e.obs.samples.Interval())
	defer tick.Stop()
	for {
		for _, s := range e.obs.samples.Samples() {
			if ok(s) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no sample with %s", what)
		case <-tick.C:
		}
	}
}

// The charts page in Chromium, with auth on and off: actors by state, creates and wakes
// per second and gateway latency percentiles, drawn from the engine's own metrics as SVG.
func TestInspectorCharts(t *testing.T) {
	for _, token := range []string{"tok", ""} {
		t.Run("token="+token, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e, a := sampledActor(t, ctx, token, "charted")
			sampled(t, ctx, e, "a create", func(s samples.Sample) bool { return s.CreatesPerSec > 0 })
			for range 5 {
				res, err := http.Get("http://" + e.PublicAddr().String() + "/gateway/" + a.ActorID.String() + "/hello")
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			sampled(t, ctx, e, "gateway latency", func(s samples.Sample) bool { return s.GatewayLatency != nil && s.GatewayLatency.Count > 0 })
			sampled(t, ctx, e, "a running actor", func(s samples.Sample) bool { return s.Actors["running"] == 1 })

			in := newInspector(t, ctx, e, token)
			in.open("#/charts", `document.querySelector("#chart-latency")`)
			if n := eval[int](in, `document.querySelectorAll("figure.chart svg").length`); n != 3 {
				t.Errorf("%d charts, want 3", n)
			}
			// Each chart has its series drawn (a line, or a dot for a single value) and named
			// in its legend.
			for _, c := range []struct{ chart, series string }{
				{"chart-actors", "running"}, {"chart-rates", "creates"}, {"chart-rates", "wakes"},
				{"chart-latency", "p50"}, {"chart-latency", "p99"},
			} {
				sel := `#` + c.chart + ` svg [data-series="` + c.series + `"]`
				if !eval[bool](in, `!!document.querySelector('`+sel+`')`) {
					t.Errorf("%s: no %s drawn", c.chart, c.series)
				}
				if !eval[bool](in, `!!document.querySelector('#`+c.chart+` .legend [data-series="`+c.series+`"]')`) {
					t.Errorf("%s: %s not in the legend", c.chart, c.series)
				}
			}
			// The actors line has a point per sample, and ends at one running actor.
			points := eval[int](in, `Math.max(...[...document.querySelectorAll('#chart-actors polyline[data-series="running"]')].map(p => p.points.numberOfItems))`)
			if points < 2 {
				t.Errorf("running actors drawn with %d points, want a line", points)
			}
			if got := eval[string](in, `document.querySelector('#chart-actors .legend [data-series="running"]').textContent`); got != "running 1" {
				t.Errorf("legend of running actors %q, want \"running 1\"", got)
			}
			in.shot("charts")
		})
	}
}
