package corrupt

import (
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/rerr"
)

// Mark returns err as store.corrupt naming what was being read when err is a
// keys.ErrBadValue or keys.ErrBadKey (stored bytes that do not decode), and
// err unchanged otherwise. nil stays nil.
func Mark(what string, err error) error {
	if errors.Is(err, keys.ErrBadValue) || errors.Is(err, keys.ErrBadKey) {
		return rerr.Corrupt(what, "stored bytes do not decode").WithCause(err)
	}
	return err
}
