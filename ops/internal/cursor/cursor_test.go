package cursor

import (
	"math"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		ts  int64
		tie []byte
	}{
		{0, nil},
		{1, []byte{0}},
		{1_750_000_000_000, []byte("envoy-abc")},
		{-1, []byte{0xff, 0xfe}},
		{math.MaxInt64, make([]byte, 19)},
		{math.MinInt64, []byte(strings.Repeat("k", 128))},
	}
	for _, tc := range tests {
		s := Encode(tc.ts, tc.tie)
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("Encode(%d, %x) = %q: not URL-safe", tc.ts, tc.tie, s)
		}
		if isDecimal(s) {
			t.Errorf("Encode(%d, %x) = %q reads as a decimal cursor", tc.ts, tc.tie, s)
		}
		p, err := Decode(s)
		if err != nil {
			t.Fatalf("Decode(%q): %v", s, err)
		}
		if p.Legacy || p.CreateTs != tc.ts || string(p.Tie) != string(tc.tie) {
			t.Errorf("Decode(Encode(%d, %x)) = %+v", tc.ts, tc.tie, p)
		}
	}
}

func TestDecodeLegacy(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "1750000000000": 1_750_000_000_000, "-5": -5, "007": 7} {
		p, err := Decode(s)
		if err != nil || !p.Legacy || p.CreateTs != want || p.Tie != nil {
			t.Errorf("Decode(%q) = %+v, %v; want legacy %d", s, p, err, want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"-",
		"99999999999999999999",            // decimal out of range
		"not a cursor!",                   // not base64url
		"AQ",                              // too short
		Encode(1, nil)[:5],                // truncated
		"Ag" + Encode(1, []byte("x"))[2:], // wrong version byte
		strings.Repeat("A", MaxLen+1),
	} {
		_, err := Decode(s)
		if !rerr.Is(err, rerr.CodeAPIBadRequest) {
			t.Errorf("Decode(%q) = %v; want api.bad_request", s, err)
			continue
		}
		e, _ := rerr.As(err)
		if e.Metadata["field"] != Field {
			t.Errorf("Decode(%q): metadata %v does not name the field", s, e.Metadata)
		}
	}
}

func TestAfterAndCompare(t *testing.T) {
	p := Position{CreateTs: 10, Tie: []byte("m")}
	tests := []struct {
		ts    int64
		tie   string
		after bool
	}{
		{11, "a", false}, // newer
		{10, "z", false}, // same ms, larger tie: listed before p
		{10, "m", false}, // p itself
		{10, "l", true},
		{10, "", true},
		{9, "z", true},
	}
	for _, tc := range tests {
		if got := p.After(tc.ts, []byte(tc.tie)); got != tc.after {
			t.Errorf("After(%d, %q) = %v, want %v", tc.ts, tc.tie, got, tc.after)
		}
		// After agrees with Compare: an item is after p iff it sorts after p.
		if got := Compare(p.CreateTs, p.Tie, tc.ts, []byte(tc.tie)) < 0; got != tc.after {
			t.Errorf("Compare(p, (%d, %q)) < 0 = %v, want %v", tc.ts, tc.tie, got, tc.after)
		}
	}
	legacy := Position{CreateTs: 10, Legacy: true}
	if legacy.After(10, []byte("a")) || !legacy.After(9, []byte("z")) {
		t.Error("a legacy cursor must select exactly the items created before its millisecond")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("123")
	f.Add(Encode(5, []byte("key")))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Decode(s)
		if err != nil {
			if !rerr.Is(err, rerr.CodeAPIBadRequest) {
				t.Fatalf("Decode(%q) = %v; want api.bad_request", s, err)
			}
			return
		}
		if p.Legacy {
			return
		}
		// Every accepted non-legacy cursor re-encodes to itself.
		if got := Encode(p.CreateTs, p.Tie); got != s {
			t.Fatalf("Encode(Decode(%q)) = %q", s, got)
		}
	})
}

func TestDecodeFor(t *testing.T) {
	twoBytes := func(tie []byte) bool { return len(tie) == 2 }
	if p, err := DecodeFor("", twoBytes); p != nil || err != nil {
		t.Fatalf("absent cursor: %v %v", p, err)
	}
	if p, err := DecodeFor(Encode(7, []byte("ab")), twoBytes); err != nil || p.CreateTs != 7 || string(p.Tie) != "ab" {
		t.Fatalf("good cursor: %+v %v", p, err)
	}
	if p, err := DecodeFor("123", twoBytes); err != nil || !p.Legacy || p.CreateTs != 123 {
		t.Fatalf("legacy cursor: %+v %v", p, err)
	}
	_, err := DecodeFor(Encode(7, []byte("abc")), twoBytes)
	if e, ok := rerr.As(err); !ok || e.Metadata["field"] != Field {
		t.Fatalf("cursor of another list: %v", err)
	}
}
