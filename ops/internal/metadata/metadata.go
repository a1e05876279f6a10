package metadata

import (
	"encoding/json"
	"strconv"

	"github.com/berthhq/berth/pkg/rerr"
)

// MaxLen bounds stored metadata, in bytes: berth's limit (Rivet has none),
// well below a transaction's 10 MB, as the metadata is rewritten at every
// registration.
const MaxLen = 1 << 20

// Field is the input field errors name.
const Field = "metadata"

// Check returns api.bad_request naming the metadata field unless md is nil
// (no metadata) or a JSON object of at most MaxLen bytes.
func Check(md json.RawMessage) error { return CheckField(Field, md) }

// CheckField is Check for metadata in another field.
func CheckField(field string, md json.RawMessage) error {
	if md == nil {
		return nil
	}
	if len(md) > MaxLen {
		return rerr.BadRequest(field, "larger than "+strconv.Itoa(MaxLen)+" bytes")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(md, &obj); err != nil || obj == nil {
		return rerr.BadRequest(field, "not a JSON object")
	}
	return nil
}
