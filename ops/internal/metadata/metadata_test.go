package metadata

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

func TestCheck(t *testing.T) {
	for md, ok := range map[string]bool{
		`{}`:                true,
		`{"a":{"b":[1,2]}}`: true,
		` {"a":1} `:         true,
		`[]`:                false,
		`null`:              false,
		`"x"`:               false,
		`{"a":`:             false,
		`{"a":1}x`:          false,
		`{"a":"` + strings.Repeat("x", MaxLen) + `"}`: false,
	} {
		err := Check(json.RawMessage(md))
		if ok != (err == nil) {
			t.Errorf("Check(%.20q) = %v", md, err)
		}
		if err != nil {
			if e, _ := rerr.As(err); e == nil || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != Field {
				t.Errorf("Check(%.20q) = %v; want api.bad_request naming metadata", md, err)
			}
		}
	}
	if Check(nil) != nil {
		t.Error("Check(nil): no metadata is fine")
	}
}
