package embedded

import (
	"errors"
	"strings"
	"testing"
)

// A second Open of a store this process holds says the store is in use, in plain words;
// once the first is closed the store opens again.
func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "is already open in this process") {
		t.Errorf("second Open = %v, want ErrInUse", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	db.Close()
}
