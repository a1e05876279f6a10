package actor

import (
	"bytes"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/udb"
)

// CountPhases fetches a page's actor states together before reading them one by one (on
// PostgreSQL one statement for the page, not one per actor), and counts them.
func TestCountPhasesPrefetchesThePage(t *testing.T) {
	w := newWorld(t)
	w.runner("r1", 2)
	for range 5 {
		w.create(CrashSleep, nil) // two placed, three pending
	}
	var log readLog
	out := opstest.Write(t, w.db, func(tx udb.Transaction) (CountPhasesOutput, error) {
		log = readLog{}
		return CountPhases(ctx, readRecorder{tx, &log}, CountPhasesInput{Namespace: w.ns, Limit: 10})
	})
	total := 0
	for _, n := range out.Phases {
		total += n
	}
	if total != 5 || out.Rows != 5 {
		t.Fatalf("counted %v in %d rows, want 5 actors", out.Phases, out.Rows)
	}
	if len(log.prefetched) != 1 || len(log.prefetched[0]) != 5 {
		t.Fatalf("prefetched %d batches of keys, want one of the page's 5 states", len(log.prefetched))
	}
	for _, k := range log.keys {
		if !slices.ContainsFunc(log.prefetched[0], func(p []byte) bool { return bytes.Equal(p, k) }) {
			t.Errorf("read %x, which was not prefetched", k)
		}
	}
}

// ApplyEvents fetches the states of the actors a message's events are about together,
// each once, before applying the events one by one.
func TestApplyEventsPrefetchesTheirActors(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 2)
	a1, _ := w.create(CrashSleep, nil)
	a2, _ := w.create(CrashSleep, nil)
	var log readLog
	out := opstest.Write(t, w.db, func(tx udb.Transaction) (EventsOutput, error) {
		log = readLog{}
		return ApplyEvents(ctx, readRecorder{tx, &log}, EventsInput{Host: RunnerHost(rid), NowMs: w.now, Config: w.cfg,
			Events: []Event{ev(a1, 0, 0, running), ev(a2, 0, 0, running), ev(a1, 0, 1, wantSleep)}})
	})
	if len(out.Effects.Ready) != 2 {
		t.Fatalf("%d actors ready, want both", len(out.Effects.Ready))
	}
	want := [][]byte{keys.ActorStateKey{ActorID: a1}.Pack(), keys.ActorStateKey{ActorID: a2}.Pack()}
	if len(log.prefetched) != 1 || !slices.EqualFunc(log.prefetched[0], want, bytes.Equal) {
		t.Fatalf("prefetched %x, want the two actors' states once each", log.prefetched)
	}
}
