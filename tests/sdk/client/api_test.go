package client_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/sdk/client/api"
)

// TestGeneratedFromCurrentSpec fails when api-public/openapi.yaml changed after the client
// was generated: regenerate it with cd sdk && go generate ./client/api.
func TestGeneratedFromCurrentSpec(t *testing.T) {
	path, err := openapitest.SpecPath()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != api.SpecSHA256 {
		t.Fatalf("api-public/openapi.yaml (sha256 %s) changed since the client was generated (from %s): regenerate it with cd sdk && go generate ./client/api", got, api.SpecSHA256)
	}
}

// TestEveryOperation checks that the client has a method for every operation of the contract.
func TestEveryOperation(t *testing.T) {
	ops, err := openapitest.Operations()
	if err != nil {
		t.Fatal(err)
	}
	client := reflect.TypeFor[*api.Client]()
	for _, op := range ops {
		var name strings.Builder
		for part := range strings.SplitSeq(op.ID, "_") {
			name.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
		if _, ok := client.MethodByName(name.String()); !ok {
			t.Errorf("%s (%s): no method %s", op, op.ID, name.String())
		}
	}
}
