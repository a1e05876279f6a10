package pegboard

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// OnChange calls its function once, at the actor's next reported change, and not once stopped;
// other actors' changes do not call it.
func TestOnChange(t *testing.T) {
	p := NewActors(ActorsOptions{DB: openMem(t), Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "dc"})
	aid, other := id.New(1), id.New(1)
	called := make(chan string, 4)
	p.OnChange(aid, func() { called <- "kept" })
	stop := p.OnChange(aid, func() { called <- "stopped" })
	stop()
	p.Apply(actor.Effects{Stopped: []id.ID{other}})
	p.Apply(actor.Effects{Stopped: []id.ID{aid}})
	select {
	case got := <-called:
		if got != "kept" {
			t.Fatalf("called %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not called at the change")
	}
	p.Apply(actor.Effects{Ready: []id.ID{aid}}) // a second change: the call was once
	p.Apply(actor.Effects{Destroyed: []id.ID{aid}})
	p.OnChange(aid, func() { called <- "later" })
	p.Apply(actor.Effects{Ready: []id.ID{aid}})
	if got := <-called; got != "later" {
		t.Fatalf("called %q, want only the later registration", got)
	}
	if n := len(p.o.Watchers.onChange); n != 0 {
		t.Fatalf("%d registrations left", n)
	}
}

func openMem(t *testing.T) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
