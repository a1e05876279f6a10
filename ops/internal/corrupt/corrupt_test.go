package corrupt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

func TestMark(t *testing.T) {
	if Mark("x", nil) != nil {
		t.Fatal("Mark(nil) != nil")
	}
	for _, err := range []error{
		fmt.Errorf("%w: RunnerCreateTsKey: value is 3 bytes", keys.ErrBadValue),
		fmt.Errorf("%w: ActiveRunnerKey: 2 segments", keys.ErrBadKey),
	} {
		got := Mark("runner", err)
		if !rerr.Is(got, rerr.CodeStoreCorrupt) || !errors.Is(got, err) {
			t.Errorf("Mark(%v) = %v; want store.corrupt wrapping it", err, got)
		}
	}
	// A udb error passes unchanged, so the retry loop still sees it.
	conflict := udb.Error{Code: udb.CodeNotCommitted}
	if got := Mark("runner", conflict); got != error(conflict) {
		t.Errorf("Mark(not_committed) = %v; want it unchanged", got)
	}
}
