package envoy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestNpmVectors runs tests/npm/envoy-vectors.mjs, which encodes messages with the official
// @rivetkit/engine-envoy-protocol (pinned in tests/npm/package-lock.json), and checks that each
// frame decodes in Go to the same value (compared field by field with the JSON the script
// printed) and re-encodes byte for byte. It needs the node packages: npm install --prefix tests/npm.
func TestNpmVectors(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "tests", "npm")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@rivetkit", "engine-envoy-protocol")); err != nil {
		t.Skip("tests/npm/node_modules is missing: run `npm install --prefix tests/npm` to check the npm vectors")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	cmd := exec.Command("node", "envoy-vectors.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node envoy-vectors.mjs: %v", err)
	}
	var vectors []struct {
		Name string
		Dir  string
		Hex  string
		JSON any
	}
	if err := json.Unmarshal(out, &vectors); err != nil {
		t.Fatalf("envoy-vectors.mjs output: %v", err)
	}
	if len(vectors) < 90 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	seen := map[string]bool{}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			in, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			m, re, err := decodeEncode(v.Dir, in)
			if err != nil {
				t.Fatalf("%x: %v", in, err)
			}
			if got := npmJSON(reflect.ValueOf(&m).Elem()); !reflect.DeepEqual(got, v.JSON) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(v.JSON)
				t.Errorf("decoded %s\nnode    %s", g, w)
			}
			if !bytes.Equal(re, in) {
				t.Errorf("re-encoded %x\nnode       %x", re, in)
			}
			collectTypes(reflect.ValueOf(&m).Elem(), seen)
		})
	}
	// Every message and union member of the schema is among the vectors.
	for _, m := range allMembers() {
		if name := reflect.TypeOf(m).Name(); !seen[name] {
			t.Errorf("no npm vector holds a %s", name)
		}
	}
}

// decodeEncode decodes in as the top-level union dir and encodes the result again.
func decodeEncode(dir string, in []byte) (m any, re []byte, err error) {
	switch dir {
	case "ToRivet":
		var d ToRivet
		if d, err = DecodeToRivet(in, Version8); err == nil {
			m = d
			re, err = EncodeToRivet(d, Version8)
		}
	case "ToEnvoy":
		var d ToEnvoy
		if d, err = DecodeToEnvoy(in, Version8); err == nil {
			m = d
			re, err = EncodeToEnvoy(d, Version8)
		}
	case "ToEnvoyConn":
		var d ToEnvoyConn
		if d, err = DecodeToEnvoyConn(in, Version8); err == nil {
			m = d
			re, err = EncodeToEnvoyConn(d, Version8)
		}
	case "ToGateway":
		var d ToGateway
		if d, err = DecodeToGateway(in, Version8); err == nil {
			m = d
			re, err = EncodeToGateway(d, Version8)
		}
	case "ToOutbound":
		var d ToOutbound
		if d, err = DecodeToOutbound(in, Version8); err == nil {
			m = d
			re, err = EncodeToOutbound(d, Version8)
		}
	case "ActorCommandKeyData":
		var d Command
		if d, err = DecodeActorCommandKeyData(in, Version8); err == nil {
			m = d
			re, err = EncodeActorCommandKeyData(d, Version8)
		}
	default:
		err = &EncodeError{"unknown dir " + dir}
	}
	return m, re, err
}

// Enum names as the TypeScript codec spells them.
var npmEnums = map[reflect.Type][]string{
	reflect.TypeOf(StopCode(0)):                  {"Ok", "Error"},
	reflect.TypeOf(StopActorReason(0)):           {"SleepIntent", "StopIntent", "Destroy", "GoingAway", "Lost"},
	reflect.TypeOf(HttpStreamAbortReasonKind(0)): {"Unknown", "Cancelled", "HandlerError", "InternalError"},
}

// npmJSON renders a decoded Go value in the shape envoy-vectors.mjs prints (after
// encoding/json): a union member as {tag: Go type name, val}, a void struct as null, struct
// fields in lowerCamel with the TypeScript spelling of initialisms (actorId, sql), 64-bit
// integers as decimal strings, other numbers as float64, bytes as hex, header and actor-name
// lists as objects, enums by name, nil pointers and nil (optional) slices as null.
func npmJSON(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		c := v.Elem()
		return map[string]any{"tag": c.Type().Name(), "val": npmJSON(c)}
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return npmJSON(v.Elem())
	case reflect.Struct:
		if v.NumField() == 0 {
			return nil
		}
		o := map[string]any{}
		for i := range v.NumField() {
			o[npmField(v.Type().Field(i).Name)] = npmJSON(v.Field(i))
		}
		return o
	case reflect.Array: // GatewayID, RequestID, SqliteValueFloat.Value (unaddressable here)
		b := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(b), v)
		return hex.EncodeToString(b)
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		switch v.Type() {
		case reflect.TypeOf([]byte(nil)):
			return hex.EncodeToString(v.Bytes())
		case reflect.TypeOf([]Header(nil)):
			o := map[string]any{}
			for _, h := range v.Interface().([]Header) {
				o[h.Name] = h.Value
			}
			return o
		case reflect.TypeOf([]ActorName(nil)):
			o := map[string]any{}
			for _, n := range v.Interface().([]ActorName) {
				o[n.Name] = map[string]any{"metadata": n.Metadata}
			}
			return o
		}
		l := make([]any, v.Len())
		for i := range l {
			l[i] = npmJSON(v.Index(i))
		}
		return l
	case reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Uint8:
		if names, ok := npmEnums[v.Type()]; ok && int(v.Uint()) < len(names) {
			return names[v.Uint()]
		}
		return float64(v.Uint())
	case reflect.Uint16, reflect.Uint32:
		return float64(v.Uint())
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	}
	panic("npmJSON: unhandled " + v.Type().String())
}

// npmField turns a Go field name into the TypeScript one: ActorID → actorId, SQL → sql,
// LastInsertRowID → lastInsertRowId.
func npmField(name string) string {
	name = strings.ReplaceAll(name, "SQL", "Sql")
	if strings.HasSuffix(name, "ID") {
		name = strings.TrimSuffix(name, "ID") + "Id"
	}
	return strings.ToLower(name[:1]) + name[1:]
}

// collectTypes records the name of every union member (interface value) inside v.
func collectTypes(v reflect.Value, seen map[string]bool) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			seen[v.Elem().Type().Name()] = true
			collectTypes(v.Elem(), seen)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			collectTypes(v.Elem(), seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			collectTypes(v.Field(i), seen)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				collectTypes(v.Index(i), seen)
			}
		}
	}
}
