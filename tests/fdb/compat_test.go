package fdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"os"
	"slices"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	"github.com/berthhq/berth/pkg/udb/transfer"
)

// The data-compatibility tests: keys packed by pkg/tuple are byte for byte
// the keys FoundationDB's official tuple encoder produces (the vectors were
// generated with it, API 730), and the stores keep and order them as they
// are, so data written through the embedded driver has FoundationDB's
// layout and moves between stores unchanged.

const vectorsPath = "testdata/tuple_vectors.json"

// vectorTypes are the element types the vector file uses; a new type in the
// file fails TestTupleVectors until this test decodes it.
var vectorTypes = []string{"null", "bytes", "string", "int", "float32", "float64", "bool", "uuid", "versionstamp", "tuple"}

type elem struct {
	T    string          `json:"t"`
	V    json.RawMessage `json:"v"`
	Bits string          `json:"bits"`
}

type vec struct {
	Name  string `json:"name"`
	Hex   string `json:"hex"`
	Tuple []elem `json:"tuple"`
}

type vectorFile struct {
	Vectors              []vec `json:"vectors"`
	Sorted               []vec `json:"sorted"`
	PackWithVersionstamp struct {
		Hex    string `json:"hex"`
		Prefix string `json:"prefix"`
		Tuple  []elem `json:"tuple"`
	} `json:"pack_with_versionstamp"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("reading the tuple vectors: %v", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("parsing %s: %v", vectorsPath, err)
	}
	if len(f.Vectors) == 0 || len(f.Sorted) == 0 || f.PackWithVersionstamp.Hex == "" {
		t.Fatalf("%s: %d vectors, %d sorted, versionstamp vector %q: want all three", vectorsPath, len(f.Vectors), len(f.Sorted), f.PackWithVersionstamp.Hex)
	}
	return f
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// decode builds the tuple an element list describes; seen counts the types.
func decode(t *testing.T, es []elem, seen map[string]int) tuple.Tuple {
	t.Helper()
	out := tuple.Tuple{}
	for _, e := range es {
		seen[e.T]++
		str := func() string {
			var s string
			if err := json.Unmarshal(e.V, &s); err != nil {
				t.Fatalf("%s element %s: %v", e.T, e.V, err)
			}
			return s
		}
		switch e.T {
		case "null":
			out = append(out, nil)
		case "bytes":
			out = append(out, unhex(t, str()))
		case "string":
			out = append(out, str())
		case "int":
			n, ok := new(big.Int).SetString(str(), 10)
			if !ok {
				t.Fatalf("bad int %s", e.V)
			}
			switch {
			case n.IsInt64():
				out = append(out, n.Int64())
			case n.IsUint64():
				out = append(out, n.Uint64())
			default:
				out = append(out, n)
			}
		case "float32":
			out = append(out, math.Float32frombits(binary.BigEndian.Uint32(unhex(t, e.Bits))))
		case "float64":
			out = append(out, math.Float64frombits(binary.BigEndian.Uint64(unhex(t, e.Bits))))
		case "bool":
			var b bool
			if err := json.Unmarshal(e.V, &b); err != nil {
				t.Fatalf("bool element %s: %v", e.V, err)
			}
			out = append(out, b)
		case "uuid":
			var u tuple.UUID
			copy(u[:], unhex(t, str()))
			out = append(out, u)
		case "versionstamp":
			b := unhex(t, str())
			var v tuple.Versionstamp
			copy(v.TransactionVersion[:], b[:10])
			v.UserVersion = binary.BigEndian.Uint16(b[10:])
			out = append(out, v)
		case "tuple":
			var inner []elem
			if err := json.Unmarshal(e.V, &inner); err != nil {
				t.Fatalf("nested tuple %s: %v", e.V, err)
			}
			out = append(out, decode(t, inner, seen))
		default:
			t.Fatalf("element type %q in %s is not decoded by this test: add it (and check pkg/tuple packs it)", e.T, vectorsPath)
		}
	}
	return out
}

// TestTupleVectors packs every vector with pkg/tuple and compares the bytes,
// covering every element type in the file.
func TestTupleVectors(t *testing.T) {
	f := loadVectors(t)
	seen := map[string]int{}
	for _, v := range append(slices.Clone(f.Vectors), f.Sorted...) {
		tup := decode(t, v.Tuple, seen)
		if got, want := tup.Pack(), unhex(t, v.Hex); !bytes.Equal(got, want) {
			t.Errorf("vector %q %v: pkg/tuple packs %x, FoundationDB's encoder %x", v.Name, tup, got, want)
		}
	}
	for _, typ := range vectorTypes {
		if seen[typ] == 0 {
			t.Errorf("no vector of type %q: the file changed; update vectorTypes", typ)
		}
	}
	vs := f.PackWithVersionstamp
	tup := decode(t, vs.Tuple, seen)
	got, err := tup.PackWithVersionstamp(unhex(t, vs.Prefix))
	if err != nil {
		t.Fatalf("PackWithVersionstamp: %v", err)
	}
	if want := unhex(t, vs.Hex); !bytes.Equal(got, want) {
		t.Errorf("PackWithVersionstamp: pkg/tuple %x, FoundationDB's encoder %x", got, want)
	}
}

// TestStoredLayout writes every vector's key through the embedded driver and
// reads the key space back: the stored keys are the vectors' bytes, in the
// order FoundationDB sorts them, and an export/import into a second store
// keeps both. A versionstamped key completed by the store keeps the layout
// of the official PackWithVersionstamp vector around the stamp.
func TestStoredLayout(t *testing.T) {
	ctx := t.Context()
	f := loadVectors(t)
	src := openStore(t, "file://"+t.TempDir())
	var want [][]byte
	for _, v := range append(slices.Clone(f.Vectors), f.Sorted...) {
		want = append(want, unhex(t, v.Hex))
	}
	if _, err := src.Transact(ctx, func(tx udb.Transaction) (any, error) {
		for i, k := range want {
			tx.Set(k, binary.BigEndian.AppendUint32(nil, uint32(i)))
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, bytes.Compare)
	want = slices.CompactFunc(want, bytes.Equal)
	if got := keys(t, src); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("the store returned %d keys %x; want the %d vector keys in byte order %x", len(got), got, len(want), want)
	}
	sorted := f.Sorted
	for i := 1; i < len(sorted); i++ {
		if a, b := unhex(t, sorted[i-1].Hex), unhex(t, sorted[i].Hex); bytes.Compare(a, b) >= 0 {
			t.Fatalf("sorted vectors %d and %d are not in increasing byte order: %x, %x", i-1, i, a, b)
		}
	}

	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, src, &buf, transfer.Options{}); err != nil {
		t.Fatal(err)
	}
	dst := openStore(t, "mem://")
	if _, err := transfer.Import(ctx, dst, &buf, transfer.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, dst); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("after export/import the store holds %d keys; want the %d vector keys", len(got), len(want))
	}

	vs := f.PackWithVersionstamp
	tmpl := unhex(t, vs.Hex)
	prefixLen := len(tmpl) - 4 - 12 - 1 // offset, versionstamp, 0x33 code
	offset := binary.LittleEndian.Uint32(tmpl[len(tmpl)-4:])
	tx, err := dst.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	tx.Atomic(udb.MutationSetVersionstampedKey, tmpl, []byte("v"))
	stampF := tx.GetVersionstamp()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	stamp, err := stampF.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantKey := slices.Clone(tmpl[:len(tmpl)-4])
	copy(wantKey[offset:], stamp[:])
	v, err := dst.ReadTransact(ctx, func(tr udb.ReadTransaction) (any, error) { return tr.Get(ctx, wantKey) })
	if err != nil || !bytes.Equal(v.([]byte), []byte("v")) {
		t.Fatalf("the versionstamped key %x (template %x, offset %d, prefix %d bytes) was not stored as FoundationDB would: %v %q",
			wantKey, tmpl, offset, prefixLen, err, v)
	}
	got, err := tuple.Unpack(wantKey[len(unhex(t, vs.Prefix)):])
	if err != nil {
		t.Fatalf("unpacking the stored versionstamped key: %v", err)
	}
	if vsGot, ok := got[1].(tuple.Versionstamp); !ok || vsGot.TransactionVersion != stamp || vsGot.UserVersion != 7 {
		t.Fatalf("stored versionstamped key unpacks to %v; want (\"a\", versionstamp %x user version 7)", got, stamp)
	}
}

func openStore(t *testing.T, url string) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("udb.Open(%q): %v", url, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func keys(t *testing.T, db udb.Database) [][]byte {
	t.Helper()
	v, err := db.ReadTransact(t.Context(), func(tr udb.ReadTransaction) (any, error) {
		return tr.GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(t.Context())
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, kv := range v.([]udb.KeyValue) {
		out = append(out, kv.Key)
	}
	return out
}
