package tuple

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
)

// vectorsPath is the oracle, generated with FoundationDB's official Go tuple encoder
// (API 730).
const vectorsPath = "testdata/tuple_vectors.json"

type jsonElem struct {
	T    string          `json:"t"`
	V    json.RawMessage `json:"v"`
	Bits string          `json:"bits"`
}

type jsonVector struct {
	Name  string     `json:"name"`
	Hex   string     `json:"hex"`
	Tuple []jsonElem `json:"tuple"`
}

type vectorFile struct {
	Vectors              []jsonVector `json:"vectors"`
	Sorted               []jsonVector `json:"sorted"`
	PackWithVersionstamp struct {
		Hex    string     `json:"hex"`
		Prefix string     `json:"prefix"`
		Tuple  []jsonElem `json:"tuple"`
	} `json:"pack_with_versionstamp"`
}

// vector is a decoded test vector: the tuple with the exact Go types Unpack
// must return, and the packed bytes.
type vector struct {
	name   string
	tuple  Tuple
	packed []byte
}

type testVectors struct {
	vectors  []vector
	sorted   []vector
	vsTuple  Tuple
	vsPrefix []byte
	vsPacked []byte
}

func loadVectors(tb testing.TB) testVectors {
	tb.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		tb.Fatalf("cannot read the tuple test vectors at %s: %v", vectorsPath, err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("parse %s: %v", vectorsPath, err)
	}
	conv := func(vs []jsonVector) []vector {
		out := make([]vector, 0, len(vs))
		for i, v := range vs {
			name := v.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			out = append(out, vector{name: name, tuple: jsonTuple(tb, v.Tuple), packed: mustHex(tb, v.Hex)})
		}
		return out
	}
	tv := testVectors{
		vectors:  conv(f.Vectors),
		sorted:   conv(f.Sorted),
		vsTuple:  jsonTuple(tb, f.PackWithVersionstamp.Tuple),
		vsPrefix: mustHex(tb, f.PackWithVersionstamp.Prefix),
		vsPacked: mustHex(tb, f.PackWithVersionstamp.Hex),
	}
	if len(tv.vectors) != 70 || len(tv.sorted) != 38 || len(tv.vsPacked) == 0 {
		tb.Fatalf("%s: got %d vectors, %d sorted, %d-byte versionstamp vector; want 70, 38, non-empty",
			vectorsPath, len(tv.vectors), len(tv.sorted), len(tv.vsPacked))
	}
	return tv
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func jsonTuple(tb testing.TB, es []jsonElem) Tuple {
	tb.Helper()
	t := Tuple{}
	for _, e := range es {
		t = append(t, jsonValue(tb, e))
	}
	return t
}

func jsonValue(tb testing.TB, e jsonElem) any {
	tb.Helper()
	str := func() string {
		var s string
		if err := json.Unmarshal(e.V, &s); err != nil {
			tb.Fatalf("element %s: value %s: %v", e.T, e.V, err)
		}
		return s
	}
	switch e.T {
	case "null":
		return nil
	case "bytes":
		return mustHex(tb, str())
	case "string":
		return str()
	case "int":
		x, ok := new(big.Int).SetString(str(), 10)
		if !ok {
			tb.Fatalf("bad int %s", e.V)
		}
		return canonicalInt(x)
	case "float32":
		u := mustHex(tb, e.Bits)
		if len(u) != 4 {
			tb.Fatalf("bad float32 bits %q", e.Bits)
		}
		return math.Float32frombits(uint32(u[0])<<24 | uint32(u[1])<<16 | uint32(u[2])<<8 | uint32(u[3]))
	case "float64":
		u := mustHex(tb, e.Bits)
		if len(u) != 8 {
			tb.Fatalf("bad float64 bits %q", e.Bits)
		}
		var x uint64
		for _, c := range u {
			x = x<<8 | uint64(c)
		}
		return math.Float64frombits(x)
	case "bool":
		var b bool
		if err := json.Unmarshal(e.V, &b); err != nil {
			tb.Fatalf("bad bool %s", e.V)
		}
		return b
	case "uuid":
		b := mustHex(tb, str())
		if len(b) != 16 {
			tb.Fatalf("bad uuid %s", e.V)
		}
		return UUID(b)
	case "versionstamp":
		b := mustHex(tb, str())
		if len(b) != 12 {
			tb.Fatalf("bad versionstamp %s", e.V)
		}
		var v Versionstamp
		copy(v.TransactionVersion[:], b)
		v.UserVersion = uint16(b[10])<<8 | uint16(b[11])
		return v
	case "tuple":
		var inner []jsonElem
		if err := json.Unmarshal(e.V, &inner); err != nil {
			tb.Fatalf("bad nested tuple %s: %v", e.V, err)
		}
		return jsonTuple(tb, inner)
	default:
		tb.Fatalf("unknown element type %q", e.T)
		return nil
	}
}

// canonicalInt returns x with the Go type Unpack gives that value.
func canonicalInt(x *big.Int) any {
	switch {
	case x.IsInt64():
		return x.Int64()
	case x.IsUint64():
		return x.Uint64()
	default:
		return new(big.Int).Set(x)
	}
}

// normalize maps a tuple built for Pack to what Unpack returns for it:
// every integer type becomes its canonical type, big.Int values become
// *big.Int or a 64-bit type, []any becomes Tuple, and the deprecated forms
// are unchanged (Pack never produces them).
func normalize(t Tuple) Tuple {
	out := make(Tuple, len(t))
	for i, e := range t {
		out[i] = normalizeElem(e)
	}
	return out
}

func normalizeElem(e any) any {
	switch v := e.(type) {
	case Tuple:
		return normalize(v)
	case []any:
		return normalize(v)
	case int:
		return int64(v)
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case uint:
		return canonicalInt(new(big.Int).SetUint64(uint64(v)))
	case uint8:
		return int64(v)
	case uint16:
		return int64(v)
	case uint32:
		return int64(v)
	case uint64:
		return canonicalInt(new(big.Int).SetUint64(v))
	case *big.Int:
		return canonicalInt(v)
	case big.Int:
		return canonicalInt(&v)
	case []byte:
		if v == nil {
			return []byte{}
		}
		return v
	default:
		return e
	}
}

// tupleDiff returns "" if got and want are equal with identical dynamic
// types (int64 vs uint64 vs *big.Int, float32 vs float64; floats compared
// by bits so NaNs compare equal to themselves), else a description.
func tupleDiff(got, want Tuple) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if d := elemDiff(got[i], want[i]); d != "" {
			return fmt.Sprintf("element %d: %s", i, d)
		}
	}
	return ""
}

func elemDiff(got, want any) string {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("type %T (%v), want %T (%v)", got, got, want, want)
	}
	var ok bool
	switch w := want.(type) {
	case nil:
		ok = true
	case []byte:
		ok = bytes.Equal(got.([]byte), w)
	case Tuple:
		if d := tupleDiff(got.(Tuple), w); d != "" {
			return "nested: " + d
		}
		ok = true
	case *big.Int:
		ok = got.(*big.Int).Cmp(w) == 0
	case float32:
		ok = math.Float32bits(got.(float32)) == math.Float32bits(w)
	case float64:
		ok = math.Float64bits(got.(float64)) == math.Float64bits(w)
	default:
		ok = got == want
	}
	if !ok {
		return fmt.Sprintf("%#v, want %#v", got, want)
	}
	return ""
}

// compareTuples is a reference implementation of the tuple order, written
// from the specification independently of the encoder: element by element,
// type class first, then value; a proper prefix sorts first.
func compareTuples(a, b Tuple) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareElems(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

func typeRank(e any) int {
	switch e.(type) {
	case nil:
		return 0
	case []byte:
		return 1
	case string:
		return 2
	case Tuple, []any:
		return 3
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, *big.Int, big.Int:
		return 4
	case float32:
		return 5
	case float64:
		return 6
	case bool:
		return 7
	case UUID:
		return 8
	case Versionstamp:
		return 9
	case testUser:
		return 10 // user type codes (0x40-0x4f) follow versionstamps (0x33)
	}
	panic(fmt.Sprintf("typeRank: unexpected %T", e))
}

func compareElems(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch ra {
	case 0:
		return 0
	case 1:
		return bytes.Compare(a.([]byte), b.([]byte))
	case 2:
		return strings.Compare(a.(string), b.(string))
	case 3:
		return compareTuples(asTuple(a), asTuple(b))
	case 4:
		return asBig(a).Cmp(asBig(b))
	case 5:
		return cmpInt64(floatKey32(a.(float32)), floatKey32(b.(float32)))
	case 6:
		return cmpInt64(floatKey64(a.(float64)), floatKey64(b.(float64)))
	case 7:
		x, y := 0, 0
		if a.(bool) {
			x = 1
		}
		if b.(bool) {
			y = 1
		}
		return cmpInt(x, y)
	case 8:
		ua, ub := a.(UUID), b.(UUID)
		return bytes.Compare(ua[:], ub[:])
	case 10:
		ua, ub := a.(testUser), b.(testUser)
		return bytes.Compare(ua[:], ub[:])
	default:
		va, vb := a.(Versionstamp), b.(Versionstamp)
		if c := bytes.Compare(va.TransactionVersion[:], vb.TransactionVersion[:]); c != 0 {
			return c
		}
		return cmpInt(int(va.UserVersion), int(vb.UserVersion))
	}
}

func asTuple(e any) Tuple {
	if t, ok := e.(Tuple); ok {
		return t
	}
	return Tuple(e.([]any))
}

func asBig(e any) *big.Int {
	switch v := normalizeElem(e).(type) {
	case int64:
		return big.NewInt(v)
	case uint64:
		return new(big.Int).SetUint64(v)
	case *big.Int:
		return v
	}
	panic(fmt.Sprintf("asBig: %T", e))
}

// floatKey32 maps a float's sign-magnitude bits to an integer in IEEE total
// order: negatives (including -0 and negative NaNs) below all positives, and
// larger magnitudes further from zero.
func floatKey32(f float32) int64 {
	u := math.Float32bits(f)
	mag := int64(u &^ (1 << 31))
	if u&(1<<31) != 0 {
		return -mag - 1
	}
	return mag
}

func floatKey64(f float64) int64 {
	u := math.Float64bits(f)
	mag := int64(u &^ (1 << 63))
	if u&(1<<63) != 0 {
		return -mag - 1
	}
	return mag
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sign(c int) int { return cmpInt(c, 0) }
