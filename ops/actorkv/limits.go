package actorkv

import (
	"fmt"

	"github.com/berthhq/berth/pkg/rerr"
)

// Limits, as in the Rivet engine (docs/protocol.md, "KV"). A key is measured as Rivet
// measures it: its length plus the 2 bytes that wrap it in the stored key, so the longest key
// is 2,046 bytes.
const (
	MaxKeySize        = 2048      // bytes, key length + 2
	MaxValueSize      = 128 << 10 // bytes per value
	MaxKeys           = 128       // keys per get, put or delete
	MaxPutPayloadSize = 976 << 10 // bytes per put: Σ (key length + 2) + Σ value length
	MaxStorageSize    = 10 << 30  // bytes per actor, counted as a put's payload
	DefaultListLimit  = 16384     // entries per list when the request sets no limit
)

// keySize is a key's size as the limits count it (Rivet's KeyWrapper::tuple_len).
func keySize(k []byte) int64 { return int64(len(k)) + 2 }

// The limit errors are validation.invalid_input with Rivet's messages, which name the limit;
// a runner sees the message in its KvErrorResponse.

func errTooManyKeys() error {
	return rerr.InvalidInput(fmt.Sprintf("a maximum of %d keys is allowed", MaxKeys))
}

func errTooManyEntries() error {
	return rerr.InvalidInput(fmt.Sprintf("A maximum of %d key-value entries is allowed", MaxKeys))
}

// errKeyTooLong names which key: "key", "start key", "end key" or "prefix key".
func errKeyTooLong(which string) error {
	return rerr.InvalidInput(fmt.Sprintf("%s is too long (max %d bytes)", which, MaxKeySize))
}

func errValueTooLarge() error {
	return rerr.InvalidInput(fmt.Sprintf("value is too large (max %d KiB)", MaxValueSize>>10))
}

func errPayloadTooLarge() error {
	return rerr.InvalidInput(fmt.Sprintf("total payload is too large (max %d KiB)", MaxPutPayloadSize>>10))
}

func errLengthMismatch() error {
	return rerr.InvalidInput("Keys list length != values list length")
}

// checkKeys checks the key count and each key's size (get and delete).
func checkKeys(ks [][]byte) error {
	if len(ks) > MaxKeys {
		return errTooManyKeys()
	}
	for _, k := range ks {
		if keySize(k) > MaxKeySize {
			return errKeyTooLong("key")
		}
	}
	return nil
}

// checkEntries checks a put's shape, sizes and payload, and returns the payload size.
func checkEntries(ks, vs [][]byte) (int64, error) {
	if len(ks) != len(vs) {
		return 0, errLengthMismatch()
	}
	if len(ks) > MaxKeys {
		return 0, errTooManyEntries()
	}
	var payload int64
	for i, k := range ks {
		if keySize(k) > MaxKeySize {
			return 0, errKeyTooLong("key")
		}
		if len(vs[i]) > MaxValueSize {
			return 0, errValueTooLarge()
		}
		payload += keySize(k) + int64(len(vs[i]))
	}
	if payload > MaxPutPayloadSize {
		return 0, errPayloadTooLarge()
	}
	return payload, nil
}
