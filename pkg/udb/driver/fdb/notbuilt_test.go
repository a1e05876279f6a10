//go:build !fdb

package fdb

import (
	"context"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// TestNotBuiltIn: without the tag, importing the package registers nothing
// and fdb:// says how to get a binary that has the driver.
func TestNotBuiltIn(t *testing.T) {
	_, err := udb.Open(context.Background(), "fdb:///etc/foundationdb/fdb.cluster")
	if err == nil {
		t.Fatal("fdb:// opened in a build without -tags fdb")
	}
	for _, want := range []string{"-tags fdb", "7.3", "foundationdb-clients", "API version 730"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
