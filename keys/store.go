package keys

import (
	"github.com/berthhq/berth/pkg/subspace"
	"github.com/berthhq/berth/pkg/tuple"
)

// The store's own metadata (berth's; docs/udb.md, "Schema version").
var storeSub = subspace.Sub(tagRivet, tagStore)

// SchemaVersionKey is (STORE, SCHEMA_VERSION) → u32 big-endian: the layout version of
// everything in the store, raised by the migrations that change it (ops/schema).
type SchemaVersionKey struct{}

func (SchemaVersionKey) Pack() []byte { return storeSub.Pack(tuple.Tuple{tagSchemaVersion}) }

func (SchemaVersionKey) Encode(v uint32) []byte { return encodeU32(v) }

func (SchemaVersionKey) Decode(b []byte) (uint32, error) { return decodeU32("SchemaVersionKey", b) }
