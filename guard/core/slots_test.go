package core

import "testing"

// A key holds at most max slots; a release frees one once, however often it is called; the
// table forgets keys with none in flight; nil Slots admit everything.
func TestSlots(t *testing.T) {
	s := NewSlots[string](2)
	r1, ok1 := s.Acquire("a")
	_, ok2 := s.Acquire("a")
	if !ok1 || !ok2 {
		t.Fatal("two slots of a refused")
	}
	if _, ok := s.Acquire("a"); ok {
		t.Fatal("a third slot of a admitted")
	}
	rb, ok := s.Acquire("b")
	if !ok {
		t.Fatal("another key refused")
	}
	r1()
	r1()
	r3, ok := s.Acquire("a")
	if !ok {
		t.Fatal("a slot freed by a release refused")
	}
	if _, ok := s.Acquire("a"); ok {
		t.Fatal("a second release of one slot freed another")
	}
	rb()
	if s.Len() != 1 {
		t.Fatalf("table holds %d keys, want 1 (b has none in flight)", s.Len())
	}
	r3()
	var none *Slots[string] = NewSlots[string](0)
	for range 3 {
		if r, ok := none.Acquire("a"); !ok {
			t.Fatal("no bound refused")
		} else {
			r()
		}
	}
}
