package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// MaxRedirects is how many redirects a call follows, each hop checked.
const MaxRedirects = 4

// Resolver resolves host names; net.DefaultResolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Client.
type Options struct {
	Policy Policy
	// TLS is the client TLS configuration (trusted roots); nil is Go's default.
	TLS *tls.Config
	// Resolver resolves host names at call time; nil is net.DefaultResolver.
	Resolver Resolver
}

// NewClient returns an http.Client whose every connection, redirects
// included, goes to an address the policy allows. It uses no proxy from the
// environment (a proxy would dial on the engine's behalf, unchecked) and
// sets no overall timeout: bound each call with its context.
func NewClient(o Options) *http.Client {
	d := &dialer{policy: o.Policy, resolver: o.Resolver, net: &net.Dialer{Timeout: 10 * time.Second}}
	if d.resolver == nil {
		d.resolver = net.DefaultResolver
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.dial,
		TLSClientConfig:        o.TLS,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return blocked("exceeded the maximum of %d redirects", MaxRedirects)
			}
			_, err := o.Policy.CheckURL(req.URL.String())
			return err
		},
	}
}

type dialer struct {
	policy   Policy
	resolver Resolver
	net      *net.Dialer
}

// dial resolves host now, keeps the addresses the policy allows and dials
// them in turn: the address checked is the address connected to.
func (d *dialer) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		if err := d.policy.CheckAddr(a); err != nil {
			return nil, err
		}
		addrs = []netip.Addr{a}
	} else {
		all, err := d.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			if d.policy.CheckAddr(a) == nil {
				addrs = append(addrs, a.Unmap())
			}
		}
		if len(addrs) == 0 {
			return nil, blocked("host %q resolved to no allowed addresses", host)
		}
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.net.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// Blocked returns the policy's refusal in err's chain, or nil.
func Blocked(err error) *BlockedError {
	var b *BlockedError
	if errors.As(err, &b) {
		return b
	}
	return nil
}

// ReadLimited reads at most limit bytes of r; truncated says there was more.
func ReadLimited(r io.Reader, limit int64) (body []byte, truncated bool, err error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(b)) > limit {
		return b[:limit], true, err
	}
	return b, false, err
}

// String describes the policy for logs.
func (p Policy) String() string {
	return fmt.Sprintf("allow_private=%t allowed_cidrs=%v", p.AllowPrivate, p.AllowedCIDRs)
}
