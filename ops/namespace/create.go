package namespace

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Name limits, as in the Rivet engine: a name is a
// lowercase DNS-label-like identifier of at most MaxNameLen bytes; a display
// name is at most MaxDisplayNameLen bytes of text with single inner spaces.
const (
	MaxNameLen        = 64
	MaxDisplayNameLen = 128
)

// CreateInput is a new namespace.
type CreateInput struct {
	// NamespaceID is chosen by the caller (id.New with the datacenter
	// label), so that every retry of the transaction writes the same id.
	NamespaceID id.ID
	Name        string
	DisplayName string
	NowMs       int64
}

// Create writes a new namespace and returns it.
//
// The name and display name are checked as the Rivet engine checks them;
// a bad one is namespace.failed_to_create with the engine's reason ("name
// too short", "name too long", "invalid name", and the same for the display
// name). The name is unique: the by-name key is read serializably, so of two
// concurrent creations of one name one commits and the other, retried, fails
// with namespace.name_not_unique. Nothing is written on failure.
func Create(ctx context.Context, tx udb.Transaction, in CreateInput) (Namespace, error) {
	if in.NamespaceID.IsZero() {
		return Namespace{}, rerr.Internal(errors.New("namespace.Create: zero namespace id"))
	}
	if reason := checkNames(in.Name, in.DisplayName); reason != "" {
		return Namespace{}, rerr.NamespaceFailedToCreate(reason)
	}
	byName := keys.NamespaceByNameKey{Name: in.Name}
	// Serializable: uniqueness must hold against concurrent creations.
	if _, taken, err := keys.Get(ctx, tx, byName); err != nil {
		return Namespace{}, corrupt.Mark("namespace", err)
	} else if taken {
		return Namespace{}, rerr.NamespaceNameNotUnique(in.Name)
	}
	// Serializable: a reused id would merge two namespaces.
	if _, used, err := keys.Get(ctx, tx, keys.NamespaceNameKey{NamespaceID: in.NamespaceID}); err != nil {
		return Namespace{}, corrupt.Mark("namespace", err)
	} else if used {
		return Namespace{}, rerr.Internal(errors.New("namespace.Create: namespace id " + in.NamespaceID.String() + " already in use"))
	}
	keys.Set(tx, keys.NamespaceNameKey{NamespaceID: in.NamespaceID}, in.Name)
	keys.Set(tx, keys.NamespaceDisplayNameKey{NamespaceID: in.NamespaceID}, in.DisplayName)
	keys.Set(tx, keys.NamespaceCreateTsKey{NamespaceID: in.NamespaceID}, in.NowMs)
	keys.Set(tx, byName, in.NamespaceID)
	return Namespace{NamespaceID: in.NamespaceID, Name: in.Name, DisplayName: in.DisplayName, CreateTs: in.NowMs}, nil
}

// checkNames returns why name or displayName is refused, or "".
func checkNames(name, displayName string) string {
	switch {
	case name == "":
		return "name too short"
	case len(name) > MaxNameLen:
		return "name too long"
	case !isIdent(name):
		return "invalid name"
	case displayName == "":
		return "display name too short"
	case len(displayName) > MaxDisplayNameLen:
		return "display name too long"
	case !isDisplayName(displayName):
		return "invalid display name"
	}
	return ""
}

// isIdent reports whether s is lowercase letters, digits and single dashes,
// neither starting nor ending with a dash. (Rivet reserves "--" as a
// separator in DNS names and paths.)
func isIdent(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isDisplayName reports whether s is valid UTF-8 text whose only whitespace
// is single spaces between words.
func isDisplayName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	prevSpace := true // no leading space
	for _, r := range s {
		space := unicode.IsSpace(r)
		if space && (r != ' ' || prevSpace) {
			return false
		}
		prevSpace = space
	}
	return !prevSpace // no trailing space
}
