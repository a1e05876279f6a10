package keys

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

func runnerConfigKeyCases() []keyCase {
	return []keyCase{
		kc(RunnerConfigDataKey{Namespace: ns1, Name: "pool"}, UnpackRunnerConfigDataKey),
		kc(RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "pool"}, UnpackRunnerConfigProtocolVersionKey),
		kc(RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigServerless, Name: "pool"}, UnpackRunnerConfigByVariantKey),
		kc(RunnerConfigByVariantKey{Namespace: ns2, Variant: RunnerConfigNormal, Name: ""}, UnpackRunnerConfigByVariantKey),
	}
}

func TestRunnerConfigKeysRoundTrip(t *testing.T) {
	for _, c := range runnerConfigKeyCases() {
		got, err := c.unpack(c.key.Pack())
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Unpack(Pack()) = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

// TestRunnerConfigKeysRejectOtherFamilies checks the runner-config Unpack
// functions against every other key type's sample (and theirs against
// ours), and against damaged forms of their own keys.
func TestRunnerConfigKeysRejectOtherFamilies(t *testing.T) {
	mine := runnerConfigKeyCases()
	others := allKeyCases()
	for i, c := range mine {
		for j, o := range mine {
			if i != j && reflect.TypeOf(o.key) != reflect.TypeOf(c.key) {
				if got, err := c.unpack(o.key.Pack()); !errors.Is(err, ErrBadKey) {
					t.Errorf("%s accepted a %s: %+v, %v", c.name, o.name, got, err)
				}
			}
		}
		for _, o := range others {
			if got, err := c.unpack(o.key.Pack()); !errors.Is(err, ErrBadKey) {
				t.Errorf("%s accepted a %s: %+v, %v", c.name, o.name, got, err)
			}
			if got, err := o.unpack(c.key.Pack()); !errors.Is(err, ErrBadKey) {
				t.Errorf("%s accepted a %s: %+v, %v", o.name, c.name, got, err)
			}
		}
		k := c.key.Pack()
		damaged := map[string][]byte{
			"empty":          nil,
			"extra element":  append(bytes.Clone(k), 0x14),
			"extra bytes":    append(bytes.Clone(k), 0xff),
			"pegboard space": append(pegboard.Bytes(), k[len(namespaceSub.Bytes()):]...),
		}
		for n := 1; n < len(k); n++ {
			damaged[fmt.Sprintf("prefix %d", n)] = k[:n]
		}
		for what, b := range damaged {
			if got, err := c.unpack(b); !errors.Is(err, ErrBadKey) {
				t.Errorf("%s: %s %x: accepted as %+v, %v", c.name, what, b, got, err)
			} else if !strings.Contains(err.Error(), strings.TrimPrefix(c.name, "keys.")) {
				t.Errorf("%s: %s: error %q does not name the key type", c.name, what, err)
			}
		}
	}
	// A variant number Rivet does not define.
	for _, v := range []int64{2, -1, 256} {
		b := namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagByVariant, ns1, v, "p"})
		if got, err := UnpackRunnerConfigByVariantKey(b); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "unknown variant") {
			t.Errorf("variant %d: %+v, %v", v, got, err)
		}
	}
}

// TestRunnerConfigKeyBytes pins the keys to bytes derived by hand from the
// tuple encoding and Rivet's segment numbers.
func TestRunnerConfigKeyBytes(t *testing.T) {
	n := hex.EncodeToString(append([]byte{0x40}, ns1[:]...))
	p := "02" + hex.EncodeToString([]byte("p")) + "00"
	// (RIVET=0, NAMESPACE=39, RUNNER=46, CONFIG=90, DATA=4 | BY_VARIANT=96, ...)
	prefix := "14" + "1527" + "152e" + "155a"
	for _, tc := range []struct {
		key  packer
		want string
	}{
		{RunnerConfigDataKey{Namespace: ns1, Name: "p"}, prefix + "1504" + n + p},
		// PROTOCOL_VERSION = 106 = 0x6a.
		{RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "p"}, prefix + "1504" + n + p + "156a"},
		// Serverless is 0 (the tuple integer 0 is the single byte 14), Normal 1.
		{RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigServerless, Name: "p"}, prefix + "1560" + n + "14" + p},
		{RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigNormal, Name: "p"}, prefix + "1560" + n + "1501" + p},
	} {
		if got := hex.EncodeToString(tc.key.Pack()); got != tc.want {
			t.Errorf("%T %+v: Pack = %s, want %s", tc.key, tc.key, got, tc.want)
		}
	}
}

// TestRunnerConfigOrder checks the orders the list op relies on: in the data
// range a config's protocol version sorts right after the config and before
// the next name; the by-variant index sorts by variant, then by name.
func TestRunnerConfigOrder(t *testing.T) {
	data := []packer{
		RunnerConfigDataKey{Namespace: ns1, Name: ""},
		RunnerConfigDataKey{Namespace: ns1, Name: "a"},
		RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "a"},
		RunnerConfigDataKey{Namespace: ns1, Name: "a\x00"},
		RunnerConfigDataKey{Namespace: ns1, Name: "a\x00b"},
		RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "a\x00b"},
		RunnerConfigDataKey{Namespace: ns1, Name: "ab"},
		RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "b"}, // a protocol version without config
		RunnerConfigDataKey{Namespace: ns1, Name: "é"},
		RunnerConfigDataKey{Namespace: ns2, Name: ""},
	}
	byVariant := []packer{
		RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigServerless, Name: "z"},
		RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigNormal, Name: ""},
		RunnerConfigByVariantKey{Namespace: ns1, Variant: RunnerConfigNormal, Name: "a"},
		RunnerConfigByVariantKey{Namespace: ns2, Variant: RunnerConfigServerless, Name: "a"},
	}
	for _, keys := range [][]packer{data, byVariant} {
		for i := 1; i < len(keys); i++ {
			if bytes.Compare(keys[i-1].Pack(), keys[i].Pack()) >= 0 {
				t.Errorf("%+v does not sort before %+v", keys[i-1], keys[i])
			}
		}
	}

	all := RunnerConfigDataKeyRange(ns1)
	begin, end := all.All()
	for i, k := range data {
		if in := inRange(k.Pack(), begin, end); in != (i < len(data)-1) {
			t.Errorf("data range All: %+v in range = %v", k, in)
		}
	}
	// After("a") holds a's protocol version (the op skips it) and everything after a.
	begin, end = all.After("a")
	for i, k := range data {
		if in := inRange(k.Pack(), begin, end); in != (i >= 2 && i < len(data)-1) {
			t.Errorf("data range After(a): %+v in range = %v", k, in)
		}
	}
	begin, end = RunnerConfigByVariantKeyRange(ns1, RunnerConfigNormal).All()
	for i, k := range byVariant {
		if in := inRange(k.Pack(), begin, end); in != (i == 1 || i == 2) {
			t.Errorf("by-variant range normal: %+v in range = %v", k, in)
		}
	}
	begin, end = RunnerConfigByVariantKeyRange(ns1, RunnerConfigNormal).After("")
	if inRange(byVariant[1].Pack(), begin, end) || !inRange(byVariant[2].Pack(), begin, end) {
		t.Error("by-variant After(\"\") is wrong")
	}
}

func u64p(v uint64) *uint64 { return &v }
func strp(s string) *string { return &s }

func sampleServerless() RunnerConfig {
	return RunnerConfig{
		Serverless: &ServerlessRunnerConfig{
			URL: "u", Headers: map[string]string{"k": "v"}, RequestLifespan: 300, MaxConcurrentActors: 1000,
			DrainGracePeriod: 10, SlotsPerRunner: 1, MaxRunners: 1000, MetadataPollInterval: u64p(5000),
			RunnerConfigCommon: RunnerConfigCommon{ActorEvictionRate: 1},
		},
		Metadata: strp("{}"),
	}
}

func runnerConfigValueCases() []valueCase {
	normal := RunnerConfig{Normal: &NormalRunnerConfig{RunnerConfigCommon{DrainOnVersionUpgrade: true, ActorEvictionRate: 1}}}
	many := RunnerConfig{Serverless: &ServerlessRunnerConfig{
		URL: "https://example.com/api/rivet", Headers: map[string]string{"b": "2", "a": "1", "c": ""},
		RequestLifespan: math.MaxUint32, MaxConcurrentActors: math.MaxUint64, DrainGracePeriod: 1, SlotsPerRunner: 7,
		MinRunners: 1, MaxRunners: 2, RunnersMargin: 3,
		RunnerConfigCommon: RunnerConfigCommon{DrainOnVersionUpgrade: true, ActorEvictionDelay: 4, ActorEvictionPeriod: 5, ActorEvictionRate: 0.25},
	}, Metadata: strp(`{"region":"fra","n":[1,2]}`)}
	return []valueCase{
		// version 6 LE, tag Normal (1), bool true, u32 0, u32 0, f32 1.0, no metadata.
		vc(RunnerConfigDataKey{}, normal, "0600"+"01"+"01"+"00000000"+"00000000"+"0000803f"+"00"),
		vc(RunnerConfigByVariantKey{}, normal, "0600"+"01"+"01"+"00000000"+"00000000"+"0000803f"+"00"),
		// version 6, tag Serverless (0), str "u", map {k: v}, u32 300, u64 1000, u32 10, u32 1,
		// u32 0, u32 1000, u32 0, optional u64 5000, bool false, u32 0, u32 0, f32 1.0, metadata "{}".
		vc(RunnerConfigDataKey{}, sampleServerless(), "0600"+"00"+"0175"+"01"+"016b"+"0176"+"2c010000"+"e803000000000000"+
			"0a000000"+"01000000"+"00000000"+"e8030000"+"00000000"+"01"+"8813000000000000"+
			"00"+"00000000"+"00000000"+"0000803f"+"01"+"027b7d"),
		vc(RunnerConfigDataKey{}, many, ""),
		vc(RunnerConfigProtocolVersionKey{}, 6, "0006"),
	}
}

func TestRunnerConfigValuesRoundTrip(t *testing.T) {
	for _, c := range runnerConfigValueCases() {
		b := c.encode()
		if c.wantHex != "" && hex.EncodeToString(b) != c.wantHex {
			t.Errorf("%s: Encode = %x, want %s", c.name, b, c.wantHex)
		}
		got, err := c.decode(b)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Decode(Encode()) = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

// TestRunnerConfigEncodingIsDeterministic: the header map is written in key
// order, so one config always has the same bytes.
func TestRunnerConfigEncodingIsDeterministic(t *testing.T) {
	c := sampleServerless()
	c.Serverless.Headers = map[string]string{}
	for i := range 20 {
		c.Serverless.Headers[string(rune('a'+i))] = "x"
	}
	first := encodeRunnerConfig(c)
	for range 20 {
		if !bytes.Equal(encodeRunnerConfig(c), first) {
			t.Fatal("two encodings of one config differ")
		}
	}
	// Nil headers read back as an empty map.
	c.Serverless.Headers = nil
	got, err := decodeRunnerConfig("x", encodeRunnerConfig(c))
	if err != nil || got.Serverless.Headers == nil || len(got.Serverless.Headers) != 0 {
		t.Errorf("nil headers: %+v, %v", got.Serverless, err)
	}
}

func TestRunnerConfigDecodeErrors(t *testing.T) {
	good := encodeRunnerConfig(sampleServerless())
	normal := encodeRunnerConfig(RunnerConfig{Normal: &NormalRunnerConfig{}})
	dupHeaders := []byte{0x06, 0x00, 0x00, 0x01, 'u', 0x02, 0x01, 'k', 0x01, 'v', 0x01, 'k', 0x01, 'w'}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":               {nil, "truncated"},
		"version 5":           {append([]byte{0x05, 0x00}, good[2:]...), "unknown version 5"},
		"unknown kind":        {[]byte{0x06, 0x00, 0x02, 0x00}, "unknown RunnerConfigKind tag 2"},
		"trailing":            {append(bytes.Clone(normal), 0x00), "trailing"},
		"truncated":           {good[:len(good)-1], "exceeds"},
		"bool 2":              {[]byte{0x06, 0x00, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0x00}, "bool is 2"},
		"NaN rate":            {[]byte{0x06, 0x00, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0x7f, 0x00}, "NaN"},
		"duplicate header":    {dupHeaders, "duplicate map key"},
		"metadata tag 2":      {append(bytes.Clone(normal[:len(normal)-1]), 0x02), "optional tag is 2"},
		"metadata not UTF-8":  {append(bytes.Clone(normal[:len(normal)-1]), 0x01, 0x01, 0xff), "UTF-8"},
		"url not UTF-8":       {[]byte{0x06, 0x00, 0x00, 0x01, 0xff}, "UTF-8"},
		"huge header count":   {[]byte{0x06, 0x00, 0x00, 0x00, 0xff, 0xff, 0x03}, "map length"},
		"non-canonical union": {[]byte{0x06, 0x00, 0x81, 0x00}, "non-canonical"},
	} {
		for _, dec := range []func([]byte) (RunnerConfig, error){RunnerConfigDataKey{}.Decode, RunnerConfigByVariantKey{}.Decode} {
			got, err := dec(tc.b)
			if !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "RunnerConfig") {
				t.Errorf("%s: %+v, %v; want an ErrBadValue naming the key and mentioning %q", name, got, err, tc.want)
			}
		}
	}
}

func TestRunnerConfigEncodeRefusesInvalid(t *testing.T) {
	for name, c := range map[string]RunnerConfig{
		"neither": {},
		"both":    {Normal: &NormalRunnerConfig{}, Serverless: &ServerlessRunnerConfig{}},
		"NaN":     {Normal: &NormalRunnerConfig{RunnerConfigCommon{ActorEvictionRate: float32(math.NaN())}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: encoded without a panic", name)
				}
			}()
			encodeRunnerConfig(c)
		}()
	}
}

func TestRunnerConfigVariant(t *testing.T) {
	for _, v := range RunnerConfigVariants {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back RunnerConfigVariant
		if err := back.UnmarshalText(b); err != nil || back != v || v.String() != string(b) {
			t.Errorf("%d: %s → %d, %v", v, b, back, err)
		}
	}
	var v RunnerConfigVariant
	if err := v.UnmarshalText([]byte("Normal")); err == nil {
		t.Error("accepted Normal")
	}
	if _, err := RunnerConfigVariant(7).MarshalText(); err == nil || RunnerConfigVariant(7).Valid() {
		t.Error("variant 7 is valid")
	}
	if (RunnerConfig{Serverless: &ServerlessRunnerConfig{}}).Variant() != RunnerConfigServerless ||
		(RunnerConfig{Normal: &NormalRunnerConfig{}}).Variant() != RunnerConfigNormal {
		t.Error("Variant")
	}
	c := sampleServerless()
	c.Serverless.ActorEvictionDelay = 9
	if c.Common().ActorEvictionDelay != 9 || (RunnerConfig{}).Common() != (RunnerConfigCommon{}) {
		t.Error("Common")
	}
}

// TestRunnerConfigStore writes the keys through a store and lists the data
// range: configs and protocol versions come back interleaved, in name order.
func TestRunnerConfigStore(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	write(t, db, func(tx udb.Transaction) error {
		for _, name := range []string{"b", "a", "c"} {
			Set(tx, RunnerConfigDataKey{Namespace: ns1, Name: name}, sampleServerless())
		}
		Set(tx, RunnerConfigProtocolVersionKey{Namespace: ns1, Name: "a"}, 6)
		Set(tx, RunnerConfigDataKey{Namespace: ns2, Name: "a"}, sampleServerless())
		return nil
	})
	got := read(t, db, func(r udb.ReadTransaction) ([]string, error) {
		begin, end := RunnerConfigDataKeyRange(ns1).All()
		kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
		var out []string
		for _, kv := range kvs {
			if k, err := UnpackRunnerConfigDataKey(kv.Key); err == nil {
				out = append(out, "config "+k.Name)
			} else if k, err := UnpackRunnerConfigProtocolVersionKey(kv.Key); err == nil {
				out = append(out, "version "+k.Name)
			} else {
				out = append(out, "other")
			}
		}
		return out, err
	})
	if want := []string{"config a", "version a", "config b", "config c"}; !slices.Equal(got, want) {
		t.Errorf("data range = %v, want %v", got, want)
	}
}

// FuzzRunnerConfigValue runs the runner-config decoder on the input: it
// never panics, every failure wraps ErrBadValue, and an accepted value
// encodes to bytes that decode to the same value.
func FuzzRunnerConfigValue(f *testing.F) {
	for _, c := range runnerConfigValueCases() {
		f.Add(c.encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeRunnerConfig("RunnerConfigDataKey", b)
		if err != nil {
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("error %v does not wrap ErrBadValue", err)
			}
			return
		}
		again, err := decodeRunnerConfig("RunnerConfigDataKey", encodeRunnerConfig(got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("Decode(Encode(Decode(%x))) = %+v, %v; want %+v", b, again, err, got)
		}
	})
}
