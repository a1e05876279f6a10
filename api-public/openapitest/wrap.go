package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/berthhq/berth/pkg/apihttp"
)

type uncheckedKey struct{}

// Unchecked returns a copy of req that Handler and NewValidatingTransport pass through without
// checking: for tests that deliberately send what the contract does not describe (an
// undocumented path, a malformed body the router never reaches).
func Unchecked(req *http.Request) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), uncheckedKey{}, true))
}

func isUnchecked(req *http.Request) bool {
	v, _ := req.Context().Value(uncheckedKey{}).(bool)
	return v
}

// Validate reports through t.Errorf every way the exchange departs from the contract (see
// Check). body is the full response body. The request body is read through req.GetBody, which
// http.NewRequest sets for bytes, strings and bytes.Buffer readers; a request with a body but
// no GetBody is reported as an error (use Handler or NewValidatingTransport for those).
func Validate(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	var reqBody []byte
	switch {
	case req.GetBody != nil:
		rc, err := req.GetBody()
		if err != nil {
			t.Errorf("openapitest: %s %s: reading the request body again: %v", req.Method, req.URL.RequestURI(), err)
			return
		}
		reqBody, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Errorf("openapitest: %s %s: reading the request body again: %v", req.Method, req.URL.RequestURI(), err)
			return
		}
	case req.Body != nil && req.Body != http.NoBody:
		t.Errorf("openapitest: %s %s: the request body cannot be read again (no GetBody); use Handler or NewValidatingTransport", req.Method, req.URL.RequestURI())
		return
	}
	report(t, req, reqBody, resp, body)
}

func report(t testing.TB, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	if err := Check(req, reqBody, resp, respBody); err != nil {
		t.Errorf("openapitest: %s %s → %d does not follow api-public/openapi.yaml:\n%v\nrequest body: %s\nresponse body: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, err, excerpt(reqBody), excerpt(respBody))
	}
}

func excerpt(b []byte) string {
	const max = 2048
	switch {
	case len(b) == 0:
		return "(none)"
	case len(b) > max:
		return fmt.Sprintf("%s… (%d bytes)", b[:max], len(b))
	default:
		return string(b)
	}
}

// NewValidatingTransport returns a RoundTripper that sends each request through base
// (http.DefaultTransport when nil) and checks the exchange against the contract, reporting
// departures through t.Errorf. The caller still gets the response, body intact. Requests marked
// with Unchecked go through unchecked.
func NewValidatingTransport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base}
}

// NewClient returns an http.Client whose transport is NewValidatingTransport(t, nil).
func NewClient(t testing.TB) *http.Client {
	return &http.Client{Transport: NewValidatingTransport(t, nil)}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
}

func (v *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isUnchecked(req) {
		return v.base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
	}
	out := req.Clone(req.Context())
	if reqBody != nil {
		out.Body = io.NopCloser(bytes.NewReader(reqBody))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
	}
	resp, err := v.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	report(v.t, req, reqBody, resp, respBody)
	return resp, nil
}

// Handler wraps a server's handler: each request it serves is checked, with the response the
// handler wrote, against the contract, and departures are reported through t.Errorf. Use it as
// httptest.NewServer(openapitest.Handler(t, h)) or call its ServeHTTP with a recorder. Requests
// marked with Unchecked are served unchecked.
func Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if isUnchecked(req) {
			h.ServeHTTP(w, req)
			return
		}
		var reqBody []byte
		if req.Body != nil && req.Body != http.NoBody {
			b, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				t.Errorf("openapitest: %s %s: reading the request body: %v", req.Method, req.URL.RequestURI(), err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			reqBody = b
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		rec := &recorder{StatusRecorder: apihttp.StatusRecorder{ResponseWriter: w}}
		h.ServeHTTP(rec, req)
		status := rec.Status()
		if status == 0 {
			status = http.StatusOK
		}
		resp := &http.Response{StatusCode: status, Header: w.Header().Clone(), Request: req}
		report(t, req, reqBody, resp, rec.body.Bytes())
	})
}

// recorder forwards a response to the client and keeps a copy of its status and body.
type recorder struct {
	apihttp.StatusRecorder
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.StatusRecorder.Write(b)
}
