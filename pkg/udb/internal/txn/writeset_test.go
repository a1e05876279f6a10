package txn

import (
	"fmt"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

func fmtRanges(rs []KeyRange) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("[%q,%q)", r.Begin, r.End)
	}
	return s
}

func TestClearRangeMerges(t *testing.T) {
	w := newWriteSet()
	w.set([]byte("c"), []byte("1"))
	w.clearRange([]byte("b"), []byte("d"))
	w.clearRange([]byte("f"), []byte("h"))
	w.clearRange([]byte("d"), []byte("f")) // touches both: one range b..h
	w.clearRange([]byte("a"), []byte("b\x00"))
	var got []KeyRange
	w.cleared.Scan(func(r KeyRange) bool { got = append(got, r); return true })
	if want := `["a","h")`; fmtRanges(got) != want {
		t.Fatalf("cleared = %s, want %s", fmtRanges(got), want)
	}
	if w.get([]byte("c")) != nil {
		t.Fatal("ClearRange kept an entry inside the range")
	}
	for k, want := range map[string]bool{"a": true, "g": true, "h": false, "": false} {
		if got := w.inCleared([]byte(k)); got != want {
			t.Errorf("inCleared(%q) = %v", k, got)
		}
	}
}

func TestIndependentGaps(t *testing.T) {
	w := newWriteSet()
	w.set([]byte("b"), []byte("1"))
	w.clearRange([]byte("d"), []byte("f"))
	w.atomic(udb.MutationAdd, []byte("g"), []byte{1})     // depends on the database
	w.atomic(udb.MutationAdd, []byte("d\x01"), []byte{1}) // inside a cleared range: known
	cases := []struct{ begin, end, want string }{
		{"a", "z", `["a","b")["b\x00","d")["f","z")`},
		{"b", "b\x00", ``},
		{"d", "f", ``},
		{"c", "e", `["c","d")`},
		{"e", "h", `["f","h")`},
	}
	for _, c := range cases {
		got := fmtRanges(w.independentGaps([]byte(c.begin), []byte(c.end)))
		if got != c.want {
			t.Errorf("gaps(%q,%q) = %s, want %s", c.begin, c.end, got, c.want)
		}
	}
}

func TestAtomicFolding(t *testing.T) {
	w := newWriteSet()
	w.atomic(udb.MutationAdd, []byte("k"), []byte{1})
	w.atomic(udb.MutationAdd, []byte("k"), []byte{2})
	e := w.get([]byte("k"))
	if e.kind != chained || len(e.ops) != 2 {
		t.Fatalf("two adds on an unread key: kind %d ops %d", e.kind, len(e.ops))
	}
	if v, p := e.resolve([]byte{10}, true); !p || v[0] != 13 {
		t.Fatalf("resolve over 10 = %v %v, want 13", v, p)
	}
	w.set([]byte("k"), []byte{5})
	w.atomic(udb.MutationAdd, []byte("k"), []byte{1})
	if e := w.get([]byte("k")); e.kind != known || e.value[0] != 6 {
		t.Fatalf("add after set: %+v", e)
	}
}
