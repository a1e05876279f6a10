package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// Sources says where Load reads configuration from. Later sources win: files in order, then
// the environment, then overrides (command-line flags).
type Sources struct {
	// Files are JSON (.json) or YAML (.yaml, .yml) files, merged in order: mappings merge key
	// by key, any other value is replaced by the later file's.
	Files []string
	// Environ is the environment in os.Environ form. Variables named BERTH__section__key
	// (BERTH__auth__admin_token, BERTH__topology__datacenters__dc2__peer_url) set that key;
	// other variables are ignored. Values are text, parsed as the key's type.
	Environ []string
	// Overrides set single keys last, typically from flags.
	Overrides []Override
}

// Override sets one key to a text value, parsed as the key's type.
type Override struct {
	Path   string // dotted key, e.g. "guard.port"
	Value  string
	Source string // shown in errors, e.g. "flag --listen"
}

// Load reads every source, merges them over the defaults, decodes and validates the result.
// It returns all problems at once, each a *FieldError naming the key (and where it was set),
// or a file error; an unknown key is an error, never ignored.
//
// Giving topology.datacenters anywhere replaces the default datacenter rather than adding to
// it. auth.admin_token may not be set to an empty string.
func Load(src Sources) (*Config, error) {
	root := newMap("")
	var errs []error
	for _, f := range src.Files {
		n, err := readFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		root = merge(root, n)
	}
	env, err := parseEnv(src.Environ)
	if err != nil {
		errs = append(errs, err)
	}
	root = merge(root, env)
	for _, o := range src.Overrides {
		path := strings.Split(o.Path, ".")
		setPath(root, path, o.Value, o.Source)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return fromTree(root)
}

// fromTree decodes root over the defaults and validates.
func fromTree(root *node) (*Config, error) {
	if root.kind != kindMap {
		return nil, fmt.Errorf("%s: the top level must be a mapping of sections, got %s", root.src, root.describe())
	}
	c := Default()
	if dcs := root.lookup("topology", "datacenters"); dcs != nil && dcs.kind != kindNull {
		c.Topology.Datacenters = nil
	}
	var d decoder
	d.decode(nil, root, reflect.ValueOf(c).Elem())
	if tok := root.lookup("auth", "admin_token"); tok != nil && tok.kind == kindScalar && tok.text == "" {
		d.fail([]string{"auth", "admin_token"}, tok, "empty; leave the key out to turn authentication off")
	}
	c.fill()
	// Validate even when some keys did not decode, so that every problem is reported at once;
	// a rule about a key that already failed to decode would only repeat it.
	errs := d.errs
	for _, e := range c.validate() {
		if !underAny(e.Path, d.errs) {
			errs = append(errs, e)
		}
	}
	for _, e := range errs {
		// Point at the source of the key, or of the nearest section that was set.
		path := strings.Split(e.Path, ".")
		for i := len(path); i > 0 && e.Source == ""; i-- {
			if n := root.lookup(path[:i]...); n != nil {
				e.Source = n.src
			}
		}
	}
	if len(errs) > 0 {
		return nil, joinFieldErrors(errs)
	}
	return c, nil
}

func readFile(name string) (*node, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var n *node
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		n, err = parseJSON(name, data)
	case ".yaml", ".yml":
		n, err = parseYAML(name, data)
	default:
		return nil, fmt.Errorf("config file %s: unknown format; name it .json, .yaml or .yml", name)
	}
	if err != nil {
		return nil, err
	}
	if n.kind != kindMap {
		return nil, fmt.Errorf("%s: the top level must be a mapping of sections, got %s", n.src, n.describe())
	}
	return n, nil
}

// underAny reports whether path is, or is inside, the path of one of errs.
func underAny(path string, errs []*FieldError) bool {
	for _, e := range errs {
		if path == e.Path || strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(e.Path, path+".") {
			return true
		}
	}
	return false
}
