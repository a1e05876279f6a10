package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/tlstest"
)

// handshake connects a client to a server over loopback with the two configurations, and
// exchanges a byte each way (in TLS 1.3 the server checks a client certificate after the
// client's handshake has returned). It returns the client's error, else the server's.
func handshake(server, client *tls.Config) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		s := tls.Server(c, server)
		_ = s.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err = io.ReadFull(s, make([]byte, 1)); err == nil {
			_, err = s.Write([]byte{2})
		}
		srvErr <- err
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err = c.Write([]byte{1}); err == nil {
			_, err = io.ReadFull(c, make([]byte, 1))
		}
		c.Close()
	}
	if serr := <-srvErr; err == nil {
		err = serr
	}
	return err
}

func leaf(t *testing.T, c *tls.Certificate) *x509.Certificate {
	t.Helper()
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A renewed certificate is served once its files change; a broken file keeps the old one.
func TestPairReloads(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, dir, "node", "127.0.0.1")
	p, err := LoadPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p.now = func() time.Time { return now }
	first := leaf(t, p.Certificate()).SerialNumber

	ca.Issue(t, dir, "node", "127.0.0.1") // the same files, a new certificate
	future := time.Now().Add(time.Minute)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, future, future); err != nil {
			t.Fatal(err)
		}
	}
	if got := leaf(t, p.Certificate()).SerialNumber; got.Cmp(first) != 0 {
		t.Fatal("the files were read again within a second of the last check")
	}
	now = now.Add(2 * time.Second)
	second := leaf(t, p.Certificate()).SerialNumber
	if second.Cmp(first) == 0 {
		t.Fatal("a renewed certificate was not read again")
	}

	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := future.Add(time.Minute)
	_ = os.Chtimes(certFile, later, later)
	now = now.Add(2 * time.Second)
	if got := leaf(t, p.Certificate()).SerialNumber; got.Cmp(second) != 0 {
		t.Fatal("a broken certificate file replaced the one in service")
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPair(bad, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadPair of junk: %v, want an error naming %s", err, bad)
	}
	if _, err := LoadPair(filepath.Join(dir, "missing.pem"), bad); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("LoadPair of a missing file: %v", err)
	}
	if _, err := LoadCAs(bad, false); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("LoadCAs of junk: %v", err)
	}
}

func TestServerAndClient(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test"), tlstest.NewCA(t, "other")
	dir := t.TempDir()
	server, err := LoadPair(ca.Issue(t, dir, "server", "127.0.0.1", "node.test"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := LoadPair(ca.Issue(t, dir, "client", "client.test"))
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := LoadPair(other.Issue(t, dir, "stranger", "client.test"))
	if err != nil {
		t.Fatal(err)
	}
	roots, err := LoadCAs(ca.File, true)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs, err := LoadCAs(ca.File, false)
	if err != nil {
		t.Fatal(err)
	}
	withName := func(c *tls.Config, name string) *tls.Config { c.ServerName = name; return c }

	if err := handshake(Server(server, nil), withName(Client(roots, nil), "node.test")); err != nil {
		t.Errorf("a client trusting the CA: %v", err)
	}
	if err := handshake(Server(server, nil), withName(Client(nil, nil), "node.test")); err == nil {
		t.Error("a client with the system's roots alone accepted the test CA's certificate")
	}
	if err := handshake(Server(server, nil), withName(Client(roots, nil), "elsewhere.test")); err == nil {
		t.Error("a certificate for other names was accepted")
	}
	old := withName(Client(roots, nil), "node.test")
	old.MaxVersion = tls.VersionTLS11
	if err := handshake(Server(server, nil), old); err == nil {
		t.Error("TLS 1.1 was accepted")
	}
	// Mutual TLS: a client certificate of the CA is required.
	if err := handshake(Server(server, clientCAs), withName(Client(roots, client), "node.test")); err != nil {
		t.Errorf("mTLS with a client certificate of the CA: %v", err)
	}
	if err := handshake(Server(server, clientCAs), withName(Client(roots, nil), "node.test")); err == nil {
		t.Error("mTLS without a client certificate was accepted")
	}
	if err := handshake(Server(server, clientCAs), withName(Client(roots, stranger), "node.test")); err == nil {
		t.Error("mTLS with another CA's client certificate was accepted")
	}
}
