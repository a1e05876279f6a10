package actorkv

import (
	"bytes"
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// DeleteRangeInput deletes the keys in [Start, End).
type DeleteRangeInput struct {
	ActorID    id.ID
	Start, End []byte
}

// DeleteRange deletes every key from Start (included) to End (excluded) in byte order; Start
// at or after End deletes nothing. Start and End are at most MaxKeySize.
//
// The range is read (serializably) to subtract its entries from the size counter, so the
// cost grows with the bytes stored in it; DropAll empties a whole store without reading.
func DeleteRange(ctx context.Context, tx udb.Transaction, in DeleteRangeInput) error {
	if err := checkRange(in.Start, in.End); err != nil {
		return err
	}
	if bytes.Compare(in.Start, in.End) >= 0 {
		return nil
	}
	begin, end := keys.ActorKVBetween(in.ActorID, in.Start, in.End, false)
	freed, err := rangeSize(ctx, tx, in.ActorID, begin, end)
	if err != nil {
		return err
	}
	if freed == 0 {
		return nil
	}
	tx.ClearRange(begin, end)
	keys.Add(tx, keys.ActorKVSizeKey{ActorID: in.ActorID}, -freed)
	return nil
}
