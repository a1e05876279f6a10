package reqlog

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/nats-io/nats-server/v2/server"
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

// Shared over a real NATS server, a watch on one node sees the requests served to its actor
// by another node, once each (its own node's are not echoed back), and only while it watches.
func TestShare(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var here, there Log
	for name, l := range map[string]*Log{"here": &here, "there": &there} {
		bus, err := pubsub.DialNATS(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bus.Close() })
		if err := l.Share(ctx, bus, name); err != nil {
			t.Fatal(err)
		}
	}
	a := id.New(1)
	if there.Watching(a) {
		t.Fatal("watched elsewhere before any watch")
	}
	entries, _, stop, ok := here.Watch(a)
	if !ok {
		t.Fatal("watch refused")
	}
	// The watch's announcement reaches the other node in its own time: it serves until
	// an entry arrives.
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		there.Served(a, "GET", "/there", 200, time.Millisecond)
		select {
		case e := <-entries:
			if e.Path != "/there" || e.Status != 200 || e.LatencyMs != 1 {
				t.Fatalf("entry from the other node: %+v", e)
			}
			got = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no entry from the other node")
		}
	}
	if !there.Watching(a) {
		t.Fatal("the other node does not know the actor is watched")
	}
	for len(entries) > 0 { // entries of the rounds that crossed the first one
		<-entries
	}
	here.Served(a, "POST", "/here", 201, 0)
	if e := <-entries; e.Path != "/here" {
		t.Fatalf("own entry: %+v", e)
	}
	// A round trip over the bus after the entry: had it been echoed back, it would be here.
	there.Served(a, "GET", "/marker", 200, 0)
	for e := range entries {
		if e.Path == "/marker" {
			break
		}
		if e.Path == "/here" {
			t.Fatal("this node's own entry came back over the bus")
		}
	}
	stop()
}
