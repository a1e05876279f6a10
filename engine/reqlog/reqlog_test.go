package reqlog

import (
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// Entries reach the watchers of their actor only, a full buffer drops rather than blocks,
// and stop ends the watch; the node's watchers are bounded.
func TestLog(t *testing.T) {
	var l Log
	a, b := id.New(1), id.New(1)
	if l.Watching(a) {
		t.Fatal("watching with no watcher")
	}
	ca, dropped, stop, ok := l.Watch(a)
	if !ok || !l.Watching(a) || l.Watching(b) {
		t.Fatalf("after Watch(a): ok %v, a %v, b %v", ok, l.Watching(a), l.Watching(b))
	}
	l.Record(b, Entry{Path: "/b"})
	l.Record(a, Entry{Path: "/a"})
	if e := <-ca; e.Path != "/a" {
		t.Fatalf("got %q", e.Path)
	}
	for range buffer + 5 {
		l.Record(a, Entry{Path: "/x"})
	}
	if len(ca) != buffer || dropped() != 5 {
		t.Fatalf("buffered %d, dropped %d", len(ca), dropped())
	}
	stop()
	stop()
	if l.Watching(a) || l.count.Load() != 0 {
		t.Fatalf("after stop: watching %v, count %d", l.Watching(a), l.count.Load())
	}
	var stops []func()
	for range MaxWatchers {
		_, _, s, ok := l.Watch(b)
		if !ok {
			t.Fatal("refused below the bound")
		}
		stops = append(stops, s)
	}
	if _, _, _, ok := l.Watch(a); ok {
		t.Fatal("accepted past the bound")
	}
	for _, s := range stops {
		s()
	}
	if _, _, _, ok := l.Watch(a); !ok {
		t.Fatal("refused after the others stopped")
	}
}
