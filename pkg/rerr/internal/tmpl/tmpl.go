// Package tmpl reads the catalog's message templates, for pkg/rerr and for the generator
// that writes its catalog: a {name} made of a-z, 0-9 and _ is a placeholder, braces around
// anything else are literal text.
package tmpl

import "strings"

// IsToken reports whether s is a catalog token: non-empty, only a-z, 0-9 and _.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Placeholders returns the {names} in tpl, in order.
func Placeholders(tpl string) []string {
	var out []string
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(tpl[i+1:], '}')
		if j < 0 {
			return out
		}
		if name := tpl[i+1 : i+1+j]; IsToken(name) {
			out = append(out, name)
			tpl = tpl[i+2+j:]
		} else {
			tpl = tpl[i+1:]
		}
	}
}
