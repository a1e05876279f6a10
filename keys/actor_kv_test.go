package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
)

// userKeys are sorted by bytes, with the edge cases of the byte-string escaping: empty, 0x00
// inside and at the end, 0xFF after a prefix, a key that prefixes the next.
var userKeys = [][]byte{
	{},
	{0x00},
	{0x00, 0x00},
	{0x00, 0xff},
	{0x01},
	[]byte("a"),
	[]byte("a\x00"),
	[]byte("a\x00b"),
	[]byte("a\x01"),
	[]byte("ab"),
	[]byte("ab\xff"),
	[]byte("ab\xff\xff"),
	[]byte("b"),
	{0xff},
	{0xff, 0x00},
	{0xff, 0xff},
}

// TestActorKVBytes pins the layout to Rivet's: (RIVET, PEGBOARD, ACTOR_KV, actor_id) then the
// nested tuple of the key as a byte string, then (DATA, chunk) or (METADATA).
func TestActorKVBytes(t *testing.T) {
	sub := pegboard.Pack(tuple.Tuple{72, aid1})
	if !bytes.HasPrefix(sub, []byte{0x14, 0x15, 0x03, 0x15, 0x48}) {
		t.Fatalf("subspace %x", sub)
	}
	tests := []struct {
		key  packer
		want string // hex after the subspace
	}{
		{ActorKVChunkKey{ActorID: aid1, Key: []byte("ab"), Chunk: 0}, "05" + "01616200" + "00" + "1504" + "14"},
		{ActorKVChunkKey{ActorID: aid1, Key: []byte{0x00, 'x'}, Chunk: 3}, "05" + "0100ff7800" + "00" + "1504" + "1503"},
		{ActorKVChunkKey{ActorID: aid1, Key: nil, Chunk: 300}, "05" + "0100" + "00" + "1504" + "16012c"},
		{ActorKVMetadataKey{ActorID: aid1, Key: []byte("ab")}, "05" + "01616200" + "00" + "152c"},
		{ActorKVSizeKey{ActorID: aid1}, "1603eb"},
	}
	for _, tt := range tests {
		b := tt.key.Pack()
		if !bytes.HasPrefix(b, sub) {
			t.Fatalf("%T %x: not in %x", tt.key, b, sub)
		}
		if got := hex.EncodeToString(b[len(sub):]); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.key, got, tt.want)
		}
	}
}

func TestActorKVRowRoundTrip(t *testing.T) {
	for _, k := range userKeys {
		for _, chunk := range []int{0, 1, 12, 999} {
			ck := ActorKVChunkKey{ActorID: aid1, Key: k, Chunk: chunk}
			r, err := ParseActorKVRow(aid1, ck.Pack())
			if err != nil || !bytes.Equal(r.Key, k) || r.IsMetadata || r.Chunk != chunk {
				t.Errorf("chunk %q/%d: %+v, %v", k, chunk, r, err)
			}
		}
		mk := ActorKVMetadataKey{ActorID: aid1, Key: k}
		r, err := ParseActorKVRow(aid1, mk.Pack())
		if err != nil || !bytes.Equal(r.Key, k) || !r.IsMetadata {
			t.Errorf("metadata %q: %+v, %v", k, r, err)
		}
		// Every row of k is in k's range and in the entries range.
		kb, ke := ActorKVKeyRange(aid1, k)
		eb, ee := ActorKVEntriesRange(aid1)
		for _, row := range [][]byte{mk.Pack(), ActorKVChunkKey{ActorID: aid1, Key: k}.Pack()} {
			if !inRange(row, kb, ke) || !inRange(row, eb, ee) {
				t.Errorf("%q: row %x outside its key range or the entries range", k, row)
			}
		}
	}
}

func TestParseActorKVRowRejects(t *testing.T) {
	other := testID(21)
	sub := pegboard.Pack(tuple.Tuple{72, aid1})
	bad := map[string][]byte{
		"other actor":       ActorKVMetadataKey{ActorID: other, Key: []byte("a")}.Pack(),
		"size key":          ActorKVSizeKey{ActorID: aid1}.Pack(),
		"bare entry prefix": tuple.Tuple{tuple.Tuple{[]byte("a")}}.AppendPack(bytes.Clone(sub)),
		"string key":        tuple.Tuple{tuple.Tuple{"a"}, 44}.AppendPack(bytes.Clone(sub)),
		"two-element key":   tuple.Tuple{tuple.Tuple{[]byte("a"), []byte("b")}, 44}.AppendPack(bytes.Clone(sub)),
		"unknown tag":       tuple.Tuple{tuple.Tuple{[]byte("a")}, 45}.AppendPack(bytes.Clone(sub)),
		"metadata + extra":  tuple.Tuple{tuple.Tuple{[]byte("a")}, 44, 1}.AppendPack(bytes.Clone(sub)),
		"chunk missing":     tuple.Tuple{tuple.Tuple{[]byte("a")}, 4}.AppendPack(bytes.Clone(sub)),
		"negative chunk":    tuple.Tuple{tuple.Tuple{[]byte("a")}, 4, -1}.AppendPack(bytes.Clone(sub)),
		"string chunk":      tuple.Tuple{tuple.Tuple{[]byte("a")}, 4, "x"}.AppendPack(bytes.Clone(sub)),
		"truncated":         sub[:len(sub)-1],
		"malformed tuple":   append(bytes.Clone(sub), 0x05, 0x01, 'a'),
	}
	for name, b := range bad {
		if _, err := ParseActorKVRow(aid1, b); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: %v, want ErrBadKey", name, err)
		}
	}
}

// TestActorKVOrder: rows sort by user key bytes, every row of a key before every row of the
// next key (also when the key is a prefix of the next), chunks in number order, then the
// metadata.
func TestActorKVOrder(t *testing.T) {
	var want [][]byte
	for _, k := range userKeys {
		for chunk := range 12 {
			want = append(want, ActorKVChunkKey{ActorID: aid1, Key: k, Chunk: chunk}.Pack())
		}
		want = append(want, ActorKVMetadataKey{ActorID: aid1, Key: k}.Pack())
	}
	want = append(want, ActorKVSizeKey{ActorID: aid1}.Pack())
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, bytes.Compare)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("position %d: %x, want %x", i, got[i], want[i])
		}
	}
	// The whole subspace holds the size counter; the entries range does not.
	b, e := ActorKVRange(aid1)
	eb, ee := ActorKVEntriesRange(aid1)
	size := ActorKVSizeKey{ActorID: aid1}.Pack()
	if !inRange(size, b, e) || inRange(size, eb, ee) {
		t.Fatal("size key: want inside ActorKVRange, outside ActorKVEntriesRange")
	}
	for _, k := range want[:len(want)-1] {
		if !inRange(k, b, e) {
			t.Fatalf("row %x outside ActorKVRange", k)
		}
	}
	// Another actor's rows are outside.
	ob := ActorKVMetadataKey{ActorID: testID(21), Key: nil}.Pack()
	if inRange(ob, b, e) {
		t.Fatal("another actor's row inside ActorKVRange")
	}
}

// rowsOf returns the user keys of userKeys whose rows (every chunk and the metadata) all lie in
// [begin, end), failing if a key has rows both in and out.
func rowsOf(t *testing.T, begin, end []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, k := range userKeys {
		rows := [][]byte{ActorKVChunkKey{ActorID: aid1, Key: k}.Pack(), ActorKVChunkKey{ActorID: aid1, Key: k, Chunk: 99}.Pack(), ActorKVMetadataKey{ActorID: aid1, Key: k}.Pack()}
		n := 0
		for _, r := range rows {
			if inRange(r, begin, end) {
				n++
			}
		}
		switch n {
		case len(rows):
			out = append(out, k)
		case 0:
		default:
			t.Fatalf("key %q split by [%x, %x)", k, begin, end)
		}
	}
	return out
}

func TestActorKVBetween(t *testing.T) {
	for _, start := range userKeys {
		for _, end := range userKeys {
			for _, incl := range []bool{false, true} {
				b, e := ActorKVBetween(aid1, start, end, incl)
				got := rowsOf(t, b, e)
				var want [][]byte
				for _, k := range userKeys {
					c := bytes.Compare(k, end)
					if bytes.Compare(k, start) >= 0 && (c < 0 || incl && c == 0) {
						want = append(want, k)
					}
				}
				if !slices.EqualFunc(got, want, bytes.Equal) {
					t.Errorf("[%q, %q] inclusive=%v: %q, want %q", start, end, incl, got, want)
				}
			}
		}
	}
}

func TestActorKVPrefixRange(t *testing.T) {
	prefixes := append(slices.Clone(userKeys), []byte("zz"), []byte("a\x00b\x00"))
	for _, p := range prefixes {
		b, e := ActorKVPrefixRange(aid1, p)
		got := rowsOf(t, b, e)
		var want [][]byte
		for _, k := range userKeys {
			if bytes.HasPrefix(k, p) {
				want = append(want, k)
			}
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("prefix %q: %q, want %q", p, got, want)
		}
	}
}

func TestActorKVMetadataCodec(t *testing.T) {
	var k ActorKVMetadataKey
	m := ActorKVMetadata{Version: []byte("2.3.19"), UpdateTs: 1767225600123}
	b := k.Encode(m)
	// serde_bare: data (uvarint length, bytes), then i64 little-endian.
	if want := "06" + hex.EncodeToString([]byte("2.3.19")) + "7ba8da769b010000"; hex.EncodeToString(b) != want {
		t.Fatalf("encoded %x, want %s", b, want)
	}
	got, err := k.Decode(b)
	if err != nil || !bytes.Equal(got.Version, m.Version) || got.UpdateTs != m.UpdateTs {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if got, err := k.Decode(k.Encode(ActorKVMetadata{UpdateTs: -1})); err != nil || len(got.Version) != 0 || got.UpdateTs != -1 {
		t.Fatalf("empty version: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0x06, 'a'}, b[:len(b)-1], append(bytes.Clone(b), 0)} {
		if _, err := k.Decode(bad); !errors.Is(err, ErrBadValue) {
			t.Errorf("decode %x: %v, want ErrBadValue", bad, err)
		}
	}
}

func FuzzParseActorKVRow(f *testing.F) {
	f.Add(ActorKVChunkKey{ActorID: aid1, Key: []byte("a\x00"), Chunk: 2}.Pack())
	f.Add(ActorKVMetadataKey{ActorID: aid1, Key: []byte{0xff}}.Pack())
	f.Add(ActorKVSizeKey{ActorID: aid1}.Pack())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseActorKVRow(aid1, b)
		if err != nil {
			return
		}
		// A parsed row packs to a key that parses the same (the tuple layer also reads
		// non-canonical integers, so the bytes may differ).
		var again []byte
		if r.IsMetadata {
			again = ActorKVMetadataKey{ActorID: aid1, Key: r.Key}.Pack()
		} else {
			again = ActorKVChunkKey{ActorID: aid1, Key: r.Key, Chunk: r.Chunk}.Pack()
		}
		r2, err := ParseActorKVRow(aid1, again)
		if err != nil || !bytes.Equal(r2.Key, r.Key) || r2.IsMetadata != r.IsMetadata || r2.Chunk != r.Chunk {
			t.Fatalf("%x parsed as %+v, packs to %x, which parses as %+v, %v", b, r, again, r2, err)
		}
	})
}

func FuzzDecodeActorKVMetadata(f *testing.F) {
	f.Add(ActorKVMetadataKey{}.Encode(ActorKVMetadata{Version: []byte("1"), UpdateTs: 5}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var k ActorKVMetadataKey
		m, err := k.Decode(b)
		if err == nil && !bytes.Equal(k.Encode(m), b) {
			t.Fatalf("%x decoded as %+v, encodes to %x", b, m, k.Encode(m))
		}
	})
}
