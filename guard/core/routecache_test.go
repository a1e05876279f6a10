package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

func statusOf(err error) int { return rerr.HTTPStatus(err) }

func TestRouteCache(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := NewRouteCache[string, int](time.Minute, 3, clk.now)
	if _, ok := c.Get("a"); ok {
		t.Fatal("empty cache hit")
	}
	changed := make(chan struct{})
	c.Put("a", 1, changed)
	c.Put("b", 2, nil)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %v, %v", v, ok)
	}
	close(changed)
	if _, ok := c.Get("a"); ok {
		t.Fatal("a route whose change channel closed was served")
	}
	clk.advance(time.Minute)
	if _, ok := c.Get("b"); ok {
		t.Fatal("an expired route was served")
	}
	for i := range 10 {
		c.Put(strconv.Itoa(i), i, nil)
		if c.Len() > 3 {
			t.Fatalf("%d entries, max 3", c.Len())
		}
	}
	c.Put("x", 9, nil)
	c.Delete("x")
	if _, ok := c.Get("x"); ok {
		t.Fatal("deleted entry served")
	}
	off := NewRouteCache[string, int](0, 0, nil)
	off.Put("a", 1, nil)
	if _, ok := off.Get("a"); ok {
		t.Fatal("a cache with ttl 0 hit")
	}
	var nilCache *RouteCache[string, int]
	nilCache.Put("a", 1, nil)
	if _, ok := nilCache.Get("a"); ok {
		t.Fatal("nil cache hit")
	}
}
