package apihttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/rerr"
)

// peerServer is a berth api-peer stand-in built on New, so its errors are real berth errors.
func peerServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	e, _ := newTestEcho(t, Options{Auth: auth.Admin(token)})
	e.GET("/things", func(c echo.Context) error {
		var q struct {
			Names []string `query:"name"`
			Limit int      `query:"limit,default=100,min=1,max=10000"`
		}
		if err := BindQuery(c, &q); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"names": q.Names, "limit": q.Limit})
	})
	e.POST("/things", func(c echo.Context) error {
		var b struct {
			Name string `json:"name"`
		}
		if err := BindJSON(c, &b); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]any{"created": b.Name})
	})
	e.DELETE("/things/:name", func(c echo.Context) error {
		return rerr.NamespaceNotFound(c.Param("name"))
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func TestPeerClient(t *testing.T) {
	srv := peerServer(t, "tok")
	p := NewPeerClient(PeerOptions{Token: "tok", Timeout: 5 * time.Second})
	defer p.Close()
	dc := Datacenter{Name: "dc2", Label: 2, PeerURL: srv.URL + "/"} // a trailing slash is fine
	ctx := context.Background()

	var got struct {
		Names []string `json:"names"`
		Limit int      `json:"limit"`
	}
	if err := p.Get(ctx, dc, "/things", url.Values{"name": {"a", "b"}, "limit": {"3"}}, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Names, ",") != "a,b" || got.Limit != 3 {
		t.Errorf("GET = %+v", got)
	}

	var created map[string]string
	if err := p.Post(ctx, dc, "/things", nil, map[string]string{"name": "x"}, &created); err != nil || created["created"] != "x" {
		t.Errorf("POST = %v, %v", created, err)
	}

	// A peer's error comes back as the same rerr error, with the same status.
	err := p.Delete(ctx, dc, "/things/ghost", nil, nil)
	e, ok := rerr.As(err)
	if !ok || !rerr.Is(e, rerr.CodeNamespaceNotFound) || e.Status != 404 || e.Metadata["namespace"] != "ghost" ||
		e.Message != "Namespace 'ghost' does not exist." {
		t.Errorf("DELETE error = %#v", err)
	}
	if !strings.Contains(err.Error(), "answered by datacenter dc2") {
		t.Errorf("the cause should name the datacenter: %v", err)
	}

	// A bad query is the peer's 400, naming the field.
	err = p.Get(ctx, dc, "/things", url.Values{"bogus": {"1"}}, nil)
	if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != "bogus" {
		t.Errorf("bad query error = %v", err)
	}

	// The caller's token wins over the configured one: a wrong one is the peer's 403.
	err = p.Get(WithToken(ctx, "wrong"), dc, "/things", nil, nil)
	if !rerr.Is(err, rerr.CodeAPIForbidden) || rerr.HTTPStatus(err) != 403 {
		t.Errorf("forwarded wrong token: %v", err)
	}
	noTok := NewPeerClient(PeerOptions{})
	defer noTok.Close()
	if err := noTok.Get(ctx, dc, "/things", nil, nil); !rerr.Is(err, rerr.CodeAPIUnauthorized) {
		t.Errorf("no token: %v", err)
	}
}

// TestPeerErrorReemitted checks that a handler returning a peer's error sends the client the
// peer's status and body unchanged.
func TestPeerErrorReemitted(t *testing.T) {
	peer := peerServer(t, "")
	p := NewPeerClient(PeerOptions{})
	defer p.Close()
	front, _ := newTestEcho(t, Options{})
	front.DELETE("/things/:name", func(c echo.Context) error {
		return p.Delete(c.Request().Context(), Datacenter{Name: "dc2", PeerURL: peer.URL}, "/things/"+c.Param("name"), nil, nil)
	})
	direct, err := http.DefaultClient.Do(mustRequest(t, "DELETE", peer.URL+"/things/ghost"))
	if err != nil {
		t.Fatal(err)
	}
	directBody, _ := io.ReadAll(direct.Body)
	direct.Body.Close()
	r := do(t, front, "DELETE", "/things/ghost")
	if r.status != direct.StatusCode || r.body != string(directBody) {
		t.Errorf("re-emitted %d %s\npeer sent %d %s", r.status, r.body, direct.StatusCode, directBody)
	}
}

func mustRequest(t *testing.T, method, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestPeerClientUnreachable(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String()
	ln.Close()

	hung := make(chan struct{})
	hungSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hung:
		}
	}))
	defer hungSrv.Close()
	defer close(hung)

	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/html" {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
			return
		}
		_, _ = io.WriteString(w, "not json")
	}))
	defer garbage.Close()

	p := NewPeerClient(PeerOptions{Timeout: 200 * time.Millisecond})
	defer p.Close()
	tests := []struct {
		name, url, path, cause string
	}{
		{"refused", closedURL, "/x", "connect"},
		{"hung", hungSrv.URL, "/x", "no answer within 200ms"},
		{"not a berth error", garbage.URL, "/html", "not a berth error"},
		{"2xx not json", garbage.URL, "/json", "does not decode"},
		{"bad url", "::nope", "/x", "bad peer URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out map[string]any
			err := p.Get(context.Background(), Datacenter{Name: "dc-" + tt.name, PeerURL: tt.url}, tt.path, nil, &out)
			e, ok := rerr.As(err)
			if !ok || !rerr.Is(e, rerr.CodeDatacenterUnreachable) || e.Status != 502 || e.Metadata["datacenter"] != "dc-"+tt.name {
				t.Fatalf("error = %v, want datacenter.unreachable naming dc-%s", err, tt.name)
			}
			if !strings.Contains(e.Message, "dc-"+tt.name) || !strings.Contains(err.Error(), tt.cause) {
				t.Errorf("error = %v, want the message to name the datacenter and the cause to contain %q", err, tt.cause)
			}
		})
	}

	// The caller going away is not the datacenter's fault.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	err = p.Get(ctx, Datacenter{Name: "dc", PeerURL: hungSrv.URL}, "/x", nil, nil)
	if _, ok := rerr.As(err); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
}

func TestPeerClientInProcess(t *testing.T) {
	local, _ := newTestEcho(t, Options{Auth: auth.Admin("tok")})
	local.GET("/who", func(c echo.Context) error {
		tok, _ := Token(c.Request().Context())
		return c.JSON(http.StatusOK, map[string]string{"path": c.Request().URL.RequestURI(), "token": tok})
	})
	// The peer URL is never dialled for the local datacenter.
	p := NewPeerClient(PeerOptions{Token: "tok"}).WithLocal(1, local)
	defer p.Close()
	var out map[string]string
	if err := p.Get(context.Background(), Datacenter{Name: "me", Label: 1, PeerURL: "http://127.0.0.1:1"}, "/who", url.Values{"a": {"1"}}, &out); err != nil {
		t.Fatal(err)
	}
	if out["path"] != "/who?a=1" || out["token"] != "tok" {
		t.Errorf("in-process call = %v", out)
	}
	err := p.Get(context.Background(), Datacenter{Name: "me", Label: 1, PeerURL: "http://x"}, "/nope", nil, nil)
	if !rerr.Is(err, rerr.CodeAPINotFound) {
		t.Errorf("in-process 404 = %v", err)
	}
	// Another label goes over the network (and fails here).
	err = p.Get(context.Background(), Datacenter{Name: "other", Label: 2, PeerURL: "http://127.0.0.1:1"}, "/who", nil, nil)
	if !rerr.Is(err, rerr.CodeDatacenterUnreachable) {
		t.Errorf("remote call = %v", err)
	}
}

func TestPeerJSONBody(t *testing.T) {
	var gotCT, gotAccept string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotCT, gotAccept = r.Header.Get("Content-Type"), r.Header.Get("Accept")
		_ = json.NewDecoder(r.Body).Decode(&gotBody)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p := NewPeerClient(PeerOptions{})
	defer p.Close()
	var out map[string]any
	if err := p.Put(context.Background(), Datacenter{Name: "d", PeerURL: srv.URL}, "/x", nil, map[string]int{"n": 1}, &out); err != nil {
		t.Fatal(err)
	}
	if gotCT != "application/json" || gotAccept != "application/json" || gotBody["n"] != float64(1) {
		t.Errorf("content-type %q accept %q body %v", gotCT, gotAccept, gotBody)
	}
}
