package apihttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/rerr"
)

// DefaultPeerTimeout bounds one peer request when PeerOptions.Timeout is zero.
const DefaultPeerTimeout = 5 * time.Second

// maxPeerResponse bounds a peer's response body.
const maxPeerResponse = 64 << 20

// PeerOptions configures NewPeerClient.
type PeerOptions struct {
	// HTTP sends the requests; nil means a client of our own with its own transport.
	HTTP *http.Client
	// Token is sent as the bearer token when the request's context carries none (see Token).
	Token string
	// Timeout bounds each request, unless the context's deadline is sooner. Zero means
	// DefaultPeerTimeout.
	Timeout time.Duration
}

// PeerClient calls a datacenter's api-peer with JSON. It is safe for concurrent use.
//
// A peer's error response is returned as the *rerr.Error it sent (rerr.Parse: same group,
// code, message, metadata and status), so a handler that returns it re-emits it unchanged. A
// peer that cannot be reached, does not answer in time or answers with something that is not a
// berth response gives datacenter.unreachable naming the datacenter; the reason is the
// error's cause, for the log.
type PeerClient struct {
	http       *http.Client
	ownsHTTP   bool
	token      string
	timeout    time.Duration
	localLabel uint16
	local      http.Handler
}

// NewPeerClient returns a client; Close releases its idle connections.
func NewPeerClient(opts PeerOptions) *PeerClient {
	p := &PeerClient{http: opts.HTTP, token: opts.Token, timeout: opts.Timeout}
	if p.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 32
		p.http = &http.Client{Transport: t}
		p.ownsHTTP = true
	}
	if p.timeout <= 0 {
		p.timeout = DefaultPeerTimeout
	}
	return p
}

// WithLocal returns a client sharing p's transport and settings that serves requests to the
// datacenter labelled label in process, by calling its api-peer handler h directly: same
// code path, same JSON, no socket. Closing p closes both.
func (p *PeerClient) WithLocal(label uint16, h http.Handler) *PeerClient {
	c := *p
	c.localLabel, c.local, c.ownsHTTP = label, h, false
	return &c
}

// Close closes idle connections of the client's own transport.
func (p *PeerClient) Close() {
	if p.ownsHTTP {
		p.http.CloseIdleConnections()
	}
}

// Timeout is the per-request timeout.
func (p *PeerClient) Timeout() time.Duration { return p.timeout }

// Get calls GET path on dc's api-peer and decodes the JSON answer into out (if not nil).
func (p *PeerClient) Get(ctx context.Context, dc Datacenter, path string, query url.Values, out any) error {
	return p.Do(ctx, dc, http.MethodGet, path, query, nil, out)
}

// Post calls POST path with body encoded as JSON.
func (p *PeerClient) Post(ctx context.Context, dc Datacenter, path string, query url.Values, body, out any) error {
	return p.Do(ctx, dc, http.MethodPost, path, query, body, out)
}

// Put calls PUT path with body encoded as JSON.
func (p *PeerClient) Put(ctx context.Context, dc Datacenter, path string, query url.Values, body, out any) error {
	return p.Do(ctx, dc, http.MethodPut, path, query, body, out)
}

// Delete calls DELETE path.
func (p *PeerClient) Delete(ctx context.Context, dc Datacenter, path string, query url.Values, out any) error {
	return p.Do(ctx, dc, http.MethodDelete, path, query, nil, out)
}

// Do calls method path?query on dc's api-peer, with body (if not nil) as JSON, and decodes a
// 2xx answer into out (if not nil). path is joined to the datacenter's peer URL.
func (p *PeerClient) Do(ctx context.Context, dc Datacenter, method, path string, query url.Values, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	budget := time.Until(deadline).Round(time.Millisecond)

	u, err := url.Parse(dc.PeerURL)
	if err != nil || u.Host == "" {
		return rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("bad peer URL %q", dc.PeerURL))
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return rerr.Internal(fmt.Errorf("encoding the body for %s %s: %w", method, path, err))
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return rerr.Internal(fmt.Errorf("building %s %s: %w", method, path, err))
	}
	req.Header.Set(echo.HeaderAccept, echo.MIMEApplicationJSON)
	if body != nil {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	if tok, ok := Token(ctx); ok {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+tok)
	} else if p.token != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+p.token)
	}

	status, respBody, err := p.send(req, dc)
	if err != nil {
		return transportError(ctx, dc, method, path, budget, err)
	}
	if status >= 200 && status < 300 {
		if out == nil || len(bytes.TrimSpace(respBody)) == 0 && status == http.StatusNoContent {
			return nil
		}
		if err := json.Unmarshal(respBody, out); err != nil {
			return rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("%s %s: status %d with a body that does not decode: %w", method, path, status, err))
		}
		return nil
	}
	e, err := rerr.Parse(status, respBody)
	if err != nil {
		return rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("%s %s: status %d with a body that is not a berth error (%.200q): %w", method, path, status, respBody, err))
	}
	return e.WithCause(fmt.Errorf("answered by datacenter %s to %s %s", dc.Name, method, path))
}

// send runs req against dc, in process when dc is local and a local handler is set.
func (p *PeerClient) send(req *http.Request, dc Datacenter) (int, []byte, error) {
	if p.local != nil && dc.Label == p.localLabel {
		req.RequestURI = req.URL.RequestURI()
		req.RemoteAddr = "in-process"
		w := &bufferedResponse{header: http.Header{}}
		p.local.ServeHTTP(w, req)
		if w.status == 0 {
			w.status = http.StatusOK
		}
		if err := req.Context().Err(); err != nil {
			return 0, nil, err
		}
		return w.status, w.body.Bytes(), nil
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerResponse+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(b) > maxPeerResponse {
		return 0, nil, fmt.Errorf("response larger than %d bytes", maxPeerResponse)
	}
	return resp.StatusCode, b, nil
}

// transportError explains a request that got no usable answer within budget. If the caller's
// own context was cancelled (the client went away), that is returned as is; otherwise the
// datacenter is unreachable.
func transportError(ctx context.Context, dc Datacenter, method, path string, budget time.Duration, err error) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, context.Canceled):
		return fmt.Errorf("%s %s to datacenter %s: %w", method, path, dc.Name, err)
	case cause != nil:
		return rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("%s %s: no answer within %s: %w", method, path, budget, err))
	}
	return rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("%s %s: %w", method, path, err))
}

// bufferedResponse collects a response written by an in-process handler.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferedResponse) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(b) > maxPeerResponse {
		return 0, fmt.Errorf("response larger than %d bytes", maxPeerResponse)
	}
	return w.body.Write(b)
}
