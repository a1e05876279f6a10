package pegboard

import (
	"testing"
	"time"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
)

// OnChange calls its function once, at the actor's next reported change, and not once stopped;
// other actors' changes do not call it.
func TestOnChange(t *testing.T) {
	p := NewActors(ActorsOptions{Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "dc"})
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
	if len(p.onChange) != 0 {
		t.Fatalf("registrations left: %v", p.onChange)
	}
}
