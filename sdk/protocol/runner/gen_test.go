package runner

import (
	"testing"

	"github.com/berthhq/berth/sdk/internal/baregen"
)

// TestGeneratedCode fails while messages_gen.go is not what the schemas generate: run
// go generate after editing a schema or the generator.
func TestGeneratedCode(t *testing.T) {
	if err := baregen.CheckGenerated("."); err != nil {
		t.Fatal(err)
	}
}
