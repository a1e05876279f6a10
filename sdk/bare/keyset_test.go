package bare

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestKeySet(t *testing.T) {
	for _, n := range []int{0, 1, smallMap, smallMap + 1, 5 * smallMap} {
		var s KeySet[string]
		for i := range n {
			if s.Add(fmt.Sprint(i)) {
				t.Fatalf("n=%d: key %d reported twice", n, i)
			}
		}
		for i := range n {
			if !s.Add(fmt.Sprint(i)) {
				t.Fatalf("n=%d: key %d not found", n, i)
			}
		}
		if n > 0 && s.Add(fmt.Sprint(n)) {
			t.Fatalf("n=%d: new key reported", n)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		var s KeySet[string]
		for _, k := range []string{"host", "accept", "content-type", "host"} {
			s.Add(k)
		}
	}); allocs != 0 {
		t.Errorf("a small KeySet allocates %v times", allocs)
	}
}

func TestWriterStrAndFailf(t *testing.T) {
	var w Writer
	w.Str("ok")
	if w.Err() != nil || string(w.Bytes()) != "\x02ok" {
		t.Fatalf("Str(ok) = %q, %v", w.Bytes(), w.Err())
	}
	w.Str("\xff")
	w.Failf("second %d", 2)
	var ee *EncodeError
	if err := w.Err(); !errors.As(err, &ee) || !strings.Contains(ee.Msg, "not valid UTF-8") || ee.Offset != 3 {
		t.Fatalf("Str(\\xff): %v", err)
	}
	w.Reset()
	w.Failf("nil %s", "Event")
	if err := w.Err(); !errors.As(err, &ee) || ee.Msg != "nil Event" {
		t.Fatalf("Failf: %v", err)
	}
}
