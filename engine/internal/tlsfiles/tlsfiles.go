// Package tlsfiles builds the engine's TLS configurations from PEM files: a server side for
// the guard and api-peer listeners and a client side for the calls between nodes and
// datacenters. Certificates are read again when their files change, so a renewed
// certificate is served without a restart.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// recheck is how often at most a handshake looks at the files' modification times.
const recheck = time.Second

// Pair is a certificate and its key, read from two PEM files and read again when either
// file changes. It is safe for concurrent use.
type Pair struct {
	certFile, keyFile string
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     [2]time.Time // the files' modification times when cert was read
	checkedAt time.Time
}

// LoadPair reads certFile and keyFile; an error names the file that is wrong.
func LoadPair(certFile, keyFile string) (*Pair, error) {
	p := &Pair{certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := p.reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// Certificate returns the current certificate, reading the files again if they changed
// since the last read (checked at most once a second). A file that has become unreadable or
// invalid keeps the previous certificate in service.
func (p *Pair) Certificate() *tls.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); now.Sub(p.checkedAt) >= recheck {
		p.checkedAt = now
		if stamp, err := p.stamps(); err == nil && stamp != p.stamp {
			_ = p.reloadLocked()
		}
	}
	return p.cert
}

// Reload reads the files again now, whatever their modification times say (SIGHUP, for a
// renewal that kept them). On an error the certificate read before stays in use.
func (p *Pair) Reload() error { return p.reload() }

func (p *Pair) reload() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reloadLocked()
}

func (p *Pair) reloadLocked() error {
	stamp, err := p.stamps()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		return fmt.Errorf("tls: certificate %s with key %s: %w", p.certFile, p.keyFile, err)
	}
	p.cert, p.stamp, p.checkedAt = &cert, stamp, p.now()
	return nil
}

func (p *Pair) stamps() ([2]time.Time, error) {
	var out [2]time.Time
	for i, f := range []string{p.certFile, p.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return out, fmt.Errorf("tls: %w", err)
		}
		out[i] = st.ModTime()
	}
	return out, nil
}

// Server returns a server configuration serving pair, TLS 1.2 at least, HTTP/1.1 only (the
// engine's WebSockets take over the connection). With clientCAs, every client must present a
// certificate signed by one of them (mutual TLS).
func Server(pair *Pair, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return pair.Certificate(), nil },
	}
	if clientCAs != nil {
		c.ClientCAs, c.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	return c
}

// Client returns a client configuration that verifies servers against the system's roots
// plus roots (if not nil), and presents pair (if not nil) when a server asks for a client
// certificate.
func Client(roots *x509.CertPool, pair *Pair) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if pair != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair.Certificate(), nil }
	}
	return c
}

// LoadCAs reads the PEM certificates of file into a pool; with system, the pool also holds
// the system's roots (to verify servers, which may also have public certificates), without it
// only the file's (to verify clients: nothing else may pass). An empty file name gives nil.
func LoadCAs(file string, system bool) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if system {
		if sys, err := x509.SystemCertPool(); err == nil {
			pool = sys
		}
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("tls: " + file + " holds no PEM certificate")
	}
	return pool, nil
}
