package reference

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/berthhq/berth/pkg/id"
)

// A Transcript is what one scenario observed of one engine: named steps in order, each a
// JSON value normalised so that what is the engines' own (ids, timestamps, cursors, ray
// ids, message wording) compares equal, while statuses, codes, field names, types and
// nulls do not.
type Transcript struct {
	mu    sync.Mutex
	steps []step
	names map[string]bool
	ids   map[string]string // an id seen → its name in this transcript ("<id 1>", …)
}

type step struct {
	name  string
	value any
}

func newTranscript() *Transcript {
	return &Transcript{names: map[string]bool{}, ids: map[string]string{}}
}

// record adds step name with value v (any value encoding/json takes), normalised.
func (tr *Transcript) record(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("step %q: %w", name, err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return fmt.Errorf("step %q: %w", name, err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.names[name] {
		return fmt.Errorf("step %q recorded twice", name)
	}
	tr.names[name] = true
	tr.steps = append(tr.steps, step{name: name, value: tr.normalise("", generic)})
	return nil
}

// idName names an engine id by the order in which the transcript first met it, so that the
// third id one engine hands out and the third the other hands out compare equal.
func (tr *Transcript) idName(s string) string {
	if n, ok := tr.ids[s]; ok {
		return n
	}
	n := "<id " + strconv.Itoa(len(tr.ids)+1) + ">"
	tr.ids[s] = n
	return n
}

// rayRef is the ray id at the end of a close reason or error text ("guard.no_route#RAY").
var rayRef = regexp.MustCompile(`#[0-9a-z]{30}\b`)

// normalise rewrites v (decoded JSON) in place of its engine-specific parts; key is the
// object key v is the value of.
func (tr *Transcript) normalise(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = tr.normalise(k, x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = tr.normalise(key, x)
		}
		return v
	case float64:
		if strings.HasSuffix(key, "_ts") || key == "ts" {
			return "<ts>"
		}
		return v
	case string:
		switch {
		case key == "cursor":
			return "<cursor>"
		case key == "message":
			return "<text>"
		case key == "x-rivet-ray-id" || key == "ray_id":
			return "<ray>"
		}
		if isID(v) {
			return tr.idName(v)
		}
		return rayRef.ReplaceAllString(v, "#<ray>")
	}
	return v
}

// isID reports whether s is an engine id (30 base36 characters that parse as one).
func isID(s string) bool {
	if len(s) != 30 {
		return false
	}
	_, err := id.Parse(s)
	return err == nil
}

// A Difference is one place where two transcripts disagree: the step, a JSON path in its
// value ("" for the whole value) and the two values as canonical JSON ("<missing>" when a
// step is in one transcript only).
type Difference struct {
	Step, Path     string
	Reference, Got string
}

func (d Difference) String() string {
	p := d.Path
	if p == "" {
		p = "$"
	}
	return fmt.Sprintf("step %q at %s: reference %s, here %s", d.Step, p, d.Reference, d.Got)
}

const missing = "<missing>"

// A StepDiff is a step whose values differ: both whole values (canonical JSON, or
// <missing>) and where they differ.
type StepDiff struct {
	Step           string
	Reference, Got string
	Places         []Difference
}

// compare lists the steps whose values differ between the reference's transcript and
// another's, in the reference's step order (then the steps only the other has).
func compare(ref, got *Transcript) []StepDiff {
	gotSteps := map[string]any{}
	for _, s := range got.steps {
		gotSteps[s.name] = s.value
	}
	var out []StepDiff
	seen := map[string]bool{}
	for _, s := range ref.steps {
		seen[s.name] = true
		g, ok := gotSteps[s.name]
		switch {
		case !ok:
			out = append(out, StepDiff{Step: s.name, Reference: canonical(s.value), Got: missing,
				Places: []Difference{{Step: s.name, Reference: canonical(s.value), Got: missing}}})
		default:
			if places := diffValues(s.name, "", s.value, g); len(places) > 0 {
				out = append(out, StepDiff{Step: s.name, Reference: canonical(s.value), Got: canonical(g), Places: places})
			}
		}
	}
	for _, s := range got.steps {
		if !seen[s.name] {
			out = append(out, StepDiff{Step: s.name, Reference: missing, Got: canonical(s.value),
				Places: []Difference{{Step: s.name, Reference: missing, Got: canonical(s.value)}}})
		}
	}
	return out
}

// diffValues walks two normalised values together: objects key by key (a key in one only is
// a difference at that key), arrays of equal length element by element, anything else
// compared whole.
func diffValues(stepName, path string, a, b any) []Difference {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var out []Difference
		for _, k := range keys {
			av, ina := am[k]
			bv, inb := bm[k]
			p := path + "." + k
			switch {
			case !ina:
				out = append(out, Difference{Step: stepName, Path: p, Reference: missing, Got: canonical(bv)})
			case !inb:
				out = append(out, Difference{Step: stepName, Path: p, Reference: canonical(av), Got: missing})
			default:
				out = append(out, diffValues(stepName, p, av, bv)...)
			}
		}
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		var out []Difference
		for i := range as {
			out = append(out, diffValues(stepName, path+"["+strconv.Itoa(i)+"]", as[i], bs[i])...)
		}
		return out
	}
	if ca, cb := canonical(a), canonical(b); ca != cb {
		return []Difference{{Step: stepName, Path: path, Reference: ca, Got: cb}}
	}
	return nil
}

// canonical is v as compact JSON with sorted keys (encoding/json sorts map keys), < and >
// left as they are.
func canonical(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<unencodable %v>", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// render is the transcript as text, a step per line, for the test log.
func (tr *Transcript) render() string {
	var b strings.Builder
	for _, s := range tr.steps {
		fmt.Fprintf(&b, "  %s: %s\n", s.name, canonical(s.value))
	}
	return b.String()
}
