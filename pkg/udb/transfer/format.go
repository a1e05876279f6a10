package transfer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/berthhq/berth/pkg/udb"
)

// The stream format; see the package documentation.
const (
	magic         = "BERTHKV\n"
	formatVersion = 1
	headerLen     = len(magic) + 2 + 2 + 8 + 4
	tagBlock      = 'B'
	tagEnd        = 'E'
	// maxBlockPayload bounds what a reader buffers for one block, so a
	// corrupt length cannot make it allocate without limit.
	maxBlockPayload = 16 << 20
)

// ErrCorrupt is wrapped by every error about a stream that is damaged or is
// not an export at all.
var ErrCorrupt = errors.New("transfer: the stream is corrupt")

// ErrTruncated is wrapped by errors about a stream that ends too early.
var ErrTruncated = errors.New("transfer: the stream is truncated")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encoder writes a stream: header, blocks, trailer.
type encoder struct {
	w      *bufio.Writer
	digest hash.Hash
	out    io.Writer // w and digest

	block   []byte // payload of the block being built
	records int
	keys    int64
	bytes   int64
}

func newEncoder(w io.Writer, readVersion int64) (*encoder, error) {
	e := &encoder{w: bufio.NewWriterSize(w, 256<<10), digest: sha256.New()}
	e.out = io.MultiWriter(e.w, e.digest)
	h := make([]byte, 0, headerLen)
	h = append(h, magic...)
	h = binary.BigEndian.AppendUint16(h, formatVersion)
	h = binary.BigEndian.AppendUint16(h, 0)
	h = binary.BigEndian.AppendUint64(h, uint64(readVersion))
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	if _, err := e.out.Write(h); err != nil {
		return nil, fmt.Errorf("transfer: writing the header: %w", err)
	}
	return e, nil
}

// add appends one record to the current block.
func (e *encoder) add(key, value []byte) {
	e.block = binary.AppendUvarint(e.block, uint64(len(key)))
	e.block = append(e.block, key...)
	e.block = binary.AppendUvarint(e.block, uint64(len(value)))
	e.block = append(e.block, value...)
	e.records++
	e.keys++
	e.bytes += int64(len(key) + len(value))
}

// flush writes the current block, if it holds any record.
func (e *encoder) flush() error {
	if e.records == 0 {
		return nil
	}
	h := []byte{tagBlock}
	h = binary.AppendUvarint(h, uint64(e.records))
	h = binary.AppendUvarint(h, uint64(len(e.block)))
	crc := binary.BigEndian.AppendUint32(nil, crc32.Checksum(e.block, castagnoli))
	for _, b := range [][]byte{h, e.block, crc} {
		if _, err := e.out.Write(b); err != nil {
			return fmt.Errorf("transfer: writing a block: %w", err)
		}
	}
	e.block, e.records = e.block[:0], 0
	return nil
}

// finish writes the trailer and flushes the buffered output.
func (e *encoder) finish(lastReadVersion int64) error {
	if err := e.flush(); err != nil {
		return err
	}
	t := []byte{tagEnd}
	t = binary.BigEndian.AppendUint64(t, uint64(e.keys))
	t = binary.BigEndian.AppendUint64(t, uint64(e.bytes))
	t = binary.BigEndian.AppendUint64(t, uint64(lastReadVersion))
	if _, err := e.out.Write(t); err != nil {
		return fmt.Errorf("transfer: writing the trailer: %w", err)
	}
	if _, err := e.w.Write(e.digest.Sum(nil)); err != nil {
		return fmt.Errorf("transfer: writing the trailer: %w", err)
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("transfer: writing the stream: %w", err)
	}
	return nil
}

// decoder reads and verifies a stream.
type decoder struct {
	r      *bufio.Reader
	digest hash.Hash
	off    int64 // bytes consumed so far

	readVersion int64
	blocks      int
	keys        int64
	bytes       int64
	lastKey     []byte
	haveKey     bool
}

func newDecoder(r io.Reader) *decoder {
	return &decoder{r: bufio.NewReaderSize(r, 256<<10), digest: sha256.New()}
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// readFull reads exactly len(p) bytes into p; what says what they are, for
// the error on a short stream.
func (d *decoder) readFull(p []byte, what string) error {
	n, err := io.ReadFull(d.r, p)
	d.digest.Write(p[:n])
	d.off += int64(n)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%w: it ends at byte %d, inside %s (after %d complete keys); the export was cut short or the file is incomplete",
			ErrTruncated, d.off, what, d.keys)
	case err != nil:
		return fmt.Errorf("transfer: reading %s at byte %d: %w", what, d.off, err)
	}
	return nil
}

func (d *decoder) readByte(what string) (byte, error) {
	var b [1]byte
	err := d.readFull(b[:], what)
	return b[0], err
}

func (d *decoder) readUvarint(what string) (uint64, error) {
	start := d.off
	var x uint64
	for i := 0; ; i++ {
		b, err := d.readByte(what)
		if err != nil {
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			return 0, corruptf("%s at byte %d is not a valid varint", what, start)
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, nil
		}
	}
}

// header reads and checks the header.
func (d *decoder) header() error {
	var h [headerLen]byte
	if err := d.readFull(h[:], "the header"); err != nil {
		if errors.Is(err, ErrTruncated) && d.off == 0 {
			return fmt.Errorf("%w: the stream is empty, not a berth export", ErrTruncated)
		}
		return err
	}
	if string(h[:len(magic)]) != magic {
		return corruptf("the stream does not start with %q: it is not a berth key-space export", magic)
	}
	body, crc := h[:headerLen-4], binary.BigEndian.Uint32(h[headerLen-4:])
	if got := crc32.Checksum(body, castagnoli); got != crc {
		return corruptf("header checksum mismatch (stored %08x, computed %08x)", crc, got)
	}
	if v := binary.BigEndian.Uint16(h[8:]); v != formatVersion {
		return corruptf("format version %d is not supported (this berth reads version %d); use the berth that wrote it", v, formatVersion)
	}
	if f := binary.BigEndian.Uint16(h[10:]); f != 0 {
		return corruptf("header flags %#04x are not supported (want 0)", f)
	}
	d.readVersion = int64(binary.BigEndian.Uint64(h[12:]))
	return nil
}

// next returns the records of the next block, verified, or end=true once the
// trailer has been read and verified.
func (d *decoder) next() (recs []udb.KeyValue, end bool, err error) {
	at := d.off
	tag, err := d.readByte("a block tag")
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			return nil, false, fmt.Errorf("%w: it ends at byte %d after %d complete keys, without the end marker; the export was cut short or the file is incomplete",
				ErrTruncated, d.off, d.keys)
		}
		return nil, false, err
	}
	switch tag {
	case tagBlock:
		recs, err := d.block(at)
		return recs, false, err
	case tagEnd:
		return nil, true, d.trailer(at)
	default:
		return nil, false, corruptf("byte %d: unknown tag %#02x (want 'B' for a block or 'E' for the end)", at, tag)
	}
}

func (d *decoder) block(at int64) ([]udb.KeyValue, error) {
	d.blocks++
	what := fmt.Sprintf("block %d (at byte %d)", d.blocks, at)
	count, err := d.readUvarint(what + " record count")
	if err != nil {
		return nil, err
	}
	length, err := d.readUvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, corruptf("%s has no records", what)
	}
	if length > maxBlockPayload {
		return nil, corruptf("%s claims %d bytes, more than the %d-byte limit", what, length, maxBlockPayload)
	}
	payload := make([]byte, length+4)
	if err := d.readFull(payload, what); err != nil {
		return nil, err
	}
	payload, crc := payload[:length], binary.BigEndian.Uint32(payload[length:])
	if got := crc32.Checksum(payload, castagnoli); got != crc {
		return nil, corruptf("%s checksum mismatch (stored %08x, computed %08x): its data is damaged", what, crc, got)
	}
	// The checksum matched, so a malformed payload is a writer's bug or a
	// forged stream; reject it all the same.
	recs := make([]udb.KeyValue, 0, min(count, length/2))
	p := payload
	field := func(name string, limit int) ([]byte, error) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, corruptf("%s record %d: %s length overruns the block", what, len(recs)+1, name)
		}
		if n > uint64(limit) {
			return nil, corruptf("%s record %d: %s of %d bytes exceeds FoundationDB's %d-byte limit", what, len(recs)+1, name, n, limit)
		}
		b := p[k : k+int(n)]
		p = p[k+int(n):]
		return b, nil
	}
	for range count {
		key, err := field("key", udb.MaxKeySize)
		if err != nil {
			return nil, err
		}
		value, err := field("value", udb.MaxValueSize)
		if err != nil {
			return nil, err
		}
		if len(key) > 0 && key[0] == 0xff {
			return nil, corruptf("%s record %d: key %q is a system key (under \\xff), which exports never hold", what, len(recs)+1, key)
		}
		if d.haveKey && bytes.Compare(key, d.lastKey) <= 0 {
			return nil, corruptf("%s record %d: key %q does not sort after the previous key %q", what, len(recs)+1, key, d.lastKey)
		}
		d.lastKey, d.haveKey = key, true
		recs = append(recs, udb.KeyValue{Key: key, Value: value})
		d.keys++
		d.bytes += int64(len(key) + len(value))
	}
	if len(p) != 0 {
		return nil, corruptf("%s: %d bytes left after its %d records", what, len(p), count)
	}
	// lastKey points into payload, which recs keep alive; copy it so the
	// next block's comparison does not depend on that.
	d.lastKey = bytes.Clone(d.lastKey)
	return recs, nil
}

func (d *decoder) trailer(at int64) error {
	var t [24]byte
	if err := d.readFull(t[:], "the trailer"); err != nil {
		return err
	}
	want := d.digest.Sum(nil)
	var got [sha256.Size]byte
	n, err := io.ReadFull(d.r, got[:])
	d.off += int64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: it ends at byte %d, inside the trailer's digest", ErrTruncated, d.off)
	} else if err != nil {
		return fmt.Errorf("transfer: reading the trailer at byte %d: %w", d.off, err)
	}
	if !bytes.Equal(got[:], want) {
		return corruptf("the stream's SHA-256 digest does not match its contents (trailer at byte %d): blocks were changed, dropped or reordered", at)
	}
	keys, sum := int64(binary.BigEndian.Uint64(t[0:])), int64(binary.BigEndian.Uint64(t[8:]))
	if keys != d.keys || sum != d.bytes {
		return corruptf("the trailer counts %d keys and %d bytes but the stream holds %d keys and %d bytes", keys, sum, d.keys, d.bytes)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("transfer: reading past the trailer: %w", err)
		}
		return corruptf("data follows the trailer at byte %d", d.off)
	}
	return nil
}
