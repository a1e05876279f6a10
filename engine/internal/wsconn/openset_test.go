package wsconn

import "testing"

type member struct {
	set    *OpenSet[*member]
	closed int
}

func (m *member) Close() {
	m.closed++
	m.set.Remove(m) // as a tunnel's Close does
}

func TestOpenSet(t *testing.T) {
	var s OpenSet[*member]
	a, b, c := &member{set: &s}, &member{set: &s}, &member{set: &s}
	if !s.Add(a) || !s.Add(b) {
		t.Fatal("Add refused before CloseAll")
	}
	b.Close() // closed on its own: out of the set
	s.CloseAll()
	if a.closed != 1 || b.closed != 1 {
		t.Fatalf("closed a %d times, b %d times; want once each", a.closed, b.closed)
	}
	if s.Add(c) {
		t.Fatal("Add accepted after CloseAll")
	}
	s.CloseAll()
	if a.closed != 1 || c.closed != 0 {
		t.Fatalf("a second CloseAll closed again: a %d, c %d", a.closed, c.closed)
	}
}
