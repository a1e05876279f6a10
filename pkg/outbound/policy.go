// Package outbound makes the engine's HTTP calls to addresses that users
// configure (serverless endpoints) under a destination policy, so that a
// runner config cannot point the engine at its own network: every address
// a host name resolves to is checked when the call is made, and the
// connection goes to the checked address, so a second DNS answer cannot
// swap it. docs/security.md, "Outbound calls", says why and what is refused.
package outbound

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Policy says which addresses the engine may call. The zero Policy refuses
// loopback, private and every other special-purpose range, and allows
// public addresses.
type Policy struct {
	// AllowPrivate allows every special-purpose range: loopback, private,
	// link-local and the rest of the categories of Category.
	AllowPrivate bool
	// AllowedCIDRs are ranges allowed although their category is refused
	// (for example 127.0.0.0/8 for tests on loopback).
	AllowedCIDRs []netip.Prefix
}

// special is a special-purpose range and the category a refusal names (the
// Rivet engine's names).
type special struct {
	prefix   netip.Prefix
	category string
}

var specials = func() []special {
	var out []special
	for _, s := range []struct{ cidr, category string }{
		{"127.0.0.0/8", "loopback"},
		{"::1/128", "loopback"},
		{"0.0.0.0/8", "unspecified"},
		{"::/128", "unspecified"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "shared"},
		{"169.254.0.0/16", "link-local"},
		{"fe80::/10", "link-local"},
		{"fc00::/7", "unique-local"},
		{"224.0.0.0/4", "multicast"},
		{"ff00::/8", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"198.18.0.0/15", "benchmarking"},
		{"192.0.2.0/24", "documentation"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"2001:db8::/32", "documentation"},
		{"240.0.0.0/4", "reserved"},
	} {
		out = append(out, special{netip.MustParsePrefix(s.cidr), s.category})
	}
	return out
}()

// Category returns the special-purpose category of addr ("loopback",
// "private", "link-local", …), or "" for a public address. An IPv4 address
// mapped into IPv6 counts as the IPv4 address.
func Category(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	for _, s := range specials {
		if s.prefix.Contains(addr) {
			return s.category
		}
	}
	return ""
}

// BlockedError is a destination the policy refuses. Reason is worded as the
// Rivet engine words it.
type BlockedError struct{ Reason string }

func (e *BlockedError) Error() string { return e.Reason }

func blocked(format string, args ...any) *BlockedError {
	return &BlockedError{Reason: fmt.Sprintf(format, args...)}
}

// CheckAddr returns a *BlockedError when p refuses addr.
func (p Policy) CheckAddr(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	cat := Category(addr)
	if cat == "" || p.AllowPrivate {
		return nil
	}
	for _, c := range p.AllowedCIDRs {
		if c.Contains(addr) {
			return nil
		}
	}
	return blocked("address %s is not an allowed destination (%s)", addr, cat)
}

// CheckURL checks what can be checked of raw without resolving a name: an
// absolute http or https URL with a host, no user info, a valid port, and a
// literal address the policy allows. The errors are worded as the Rivet
// engine's (without its "invalid serverless url: " prefix); a refused
// address is a *BlockedError.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil && strings.Contains(err.Error(), "invalid port"):
		return nil, fmt.Errorf("invalid port number")
	case err != nil, u.Scheme == "" && !strings.Contains(raw, "://"):
		return nil, fmt.Errorf("relative URL without a base")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, blocked("scheme %q is not allowed, expected http or https", u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("empty host")
	case u.User != nil:
		return nil, blocked("url must not contain embedded credentials")
	}
	if port := u.Port(); port != "" {
		n := 0
		for _, c := range port {
			n = n*10 + int(c-'0')
			if n > 65535 {
				return nil, fmt.Errorf("invalid port number")
			}
		}
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := p.CheckAddr(addr); err != nil {
			return nil, err
		}
	}
	return u, nil
}
