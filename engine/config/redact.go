package config

import (
	"maps"
	"net/url"
	"strings"
)

// Mask replaces a secret in Redacted's output.
const Mask = "********"

// Redacted returns a copy of c that is safe to show: auth.admin_token becomes Mask when set,
// and every URL loses its password, in the user info (postgres://user:pw@host) and in query
// parameters that name one (?password=, ?sslpassword=). c is not changed.
func (c *Config) Redacted() *Config {
	r := *c
	if r.Auth.AdminToken != "" {
		r.Auth.AdminToken = Mask
	}
	r.Database.URL = RedactURL(r.Database.URL)
	r.Topology.Datacenters = maps.Clone(c.Topology.Datacenters)
	for name, dc := range r.Topology.Datacenters {
		dc.PublicURL, dc.PeerURL, dc.ProxyURL = RedactURL(dc.PublicURL), RedactURL(dc.PeerURL), RedactURL(dc.ProxyURL)
		r.Topology.Datacenters[name] = dc
	}
	return &r
}

// RedactURL masks the password of a URL, in the user info and in query parameters whose
// name contains "password". Text that is not a URL is masked whole when it contains '@'
// (it may hold credentials) and returned as it is otherwise.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return Mask
		}
		return raw
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
			changed = true
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q.Set(k, Mask)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if !changed {
		return raw
	}
	s := u.String()
	// url.String escapes the mask's '*' in the user info; show it as typed.
	return strings.ReplaceAll(s, url.QueryEscape(Mask), Mask)
}
