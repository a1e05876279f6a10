package engine

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/tlstest"
)

// A certificate file that cannot be read stops the start with an error naming the key and
// the file.
func TestStartNamesABadCertificateFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cfg := testConfig("")
	cfg.Guard.TLS.CertFile, cfg.Guard.TLS.KeyFile = missing, missing
	_, err := Start(context.Background(), Options{Config: cfg, Log: quiet})
	if err == nil || !strings.Contains(err.Error(), "guard.tls") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Start with a missing certificate: %v, want an error naming guard.tls and %s", err, missing)
	}
}

// Behind the connection cap, the guard port's TLS still reaches net/http as TLS: the
// dashboard's session cookie is marked Secure.
func TestGuardTLSReachesHandlers(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	cfg := testConfig("tok")
	cfg.Guard.TLS.CertFile, cfg.Guard.TLS.KeyFile = ca.Issue(t, t.TempDir(), "guard", "127.0.0.1")
	e := startEngine(t, cfg)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, "https://"+e.PublicAddr().String()+"/ui/login", strings.NewReader("token=tok"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].Secure {
		t.Fatalf("login over TLS: %d, cookies %v; want 303 and one Secure cookie", resp.StatusCode, cookies)
	}
}
