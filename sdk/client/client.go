package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/berthhq/berth/sdk/client/api"
)

// DefaultNamespace is the namespace calls use unless WithNamespace or InNamespace says
// otherwise. The engine creates it at first start.
const DefaultNamespace = "default"

// maxBody bounds a response body the client reads (a page of 10,000 runners is a few MiB).
const maxBody = 64 << 20

// Client calls berth's public API. It is safe for concurrent use. The zero value is not
// usable; call New.
type Client struct {
	raw       *api.Client
	namespace string
}

// Option configures New.
type Option func(*settings)

type settings struct {
	token     string
	hc        api.HttpRequestDoer
	namespace string
}

// WithToken sends token as "Authorization: Bearer <token>" on every request, needed on every
// endpoint but /health and /metadata when the engine has auth on: the admin token, or an
// admin or read token of one namespace (which sees that namespace only).
func WithToken(token string) Option { return func(s *settings) { s.token = token } }

// WithHTTPClient sends requests through hc instead of http.DefaultClient (for timeouts,
// proxies, TLS settings, or a test transport).
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.hc = hc } }

// WithNamespace sets the namespace (by name) of the namespaced calls: runners, envoys and
// runner configs. The default is DefaultNamespace.
func WithNamespace(namespace string) Option { return func(s *settings) { s.namespace = namespace } }

// New returns a client for the engine at endpoint, e.g. "http://localhost:6420".
func New(endpoint string, opts ...Option) (*Client, error) {
	s := settings{hc: http.DefaultClient, namespace: DefaultNamespace}
	for _, o := range opts {
		o(&s)
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("berth client: endpoint %q must start with http:// or https://", endpoint)
	}
	if s.namespace == "" {
		return nil, errors.New("berth client: the namespace must not be empty")
	}
	rawOpts := []api.ClientOption{api.WithHTTPClient(s.hc)}
	if s.token != "" {
		auth := "Bearer " + s.token
		rawOpts = append(rawOpts, api.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			return nil
		}))
	}
	raw, err := api.NewClient(endpoint, rawOpts...)
	if err != nil {
		return nil, fmt.Errorf("berth client: %w", err)
	}
	return &Client{raw: raw, namespace: s.namespace}, nil
}

// Raw returns the generated low-level client, with the same endpoint, HTTP client and token:
// for the operations this package does not wrap (the health fan-out).
// Its methods return the *http.Response; DecodeError turns an error response into an
// *APIError.
func (c *Client) Raw() *api.Client { return c.raw }

// Namespace returns the namespace of c's namespaced calls.
func (c *Client) Namespace() string { return c.namespace }

// InNamespace returns a client that shares c's connection settings but calls into namespace.
func (c *Client) InNamespace(namespace string) *Client {
	return &Client{raw: c.raw, namespace: namespace}
}

// The engine's own reports, the generated models.
type (
	Health   = api.HealthResponse      // GET /health: status, runtime and version
	Metadata = api.MetadataGetResponse // GET /metadata: the build and the protocol versions
)

// Health returns the engine's liveness report; it needs no token.
func (c *Client) Health(ctx context.Context) (Health, error) {
	return decode[Health](c.raw.HealthGet(ctx))
}

// Metadata returns the engine's build and protocol versions; it needs no token.
func (c *Client) Metadata(ctx context.Context) (Metadata, error) {
	return decode[Metadata](c.raw.MetadataGet(ctx))
}

// Runners returns the runner calls.
func (c *Client) Runners() *RunnersAPI { return &RunnersAPI{c: c} }

// Envoys returns the envoy calls.
func (c *Client) Envoys() *EnvoysAPI { return &EnvoysAPI{c: c} }

// Namespaces returns the namespace calls.
func (c *Client) Namespaces() *NamespacesAPI { return &NamespacesAPI{c: c} }

// Datacenters returns the datacenter calls.
func (c *Client) Datacenters() *DatacentersAPI { return &DatacentersAPI{c: c} }

// RunnerConfigs returns the runner config calls.
func (c *Client) RunnerConfigs() *RunnerConfigsAPI { return &RunnerConfigsAPI{c: c} }

// decode reads resp: a 200 is decoded into a T, anything else becomes an *APIError.
func decode[T any](resp *http.Response, err error) (T, error) {
	var out T
	if err != nil {
		return out, fmt.Errorf("berth client: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return out, fmt.Errorf("berth client: %s: reading the response: %w", what(resp), err)
	}
	if resp.StatusCode != http.StatusOK {
		return out, errorFrom(resp, body)
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("berth client: %s: decoding the response: %w", what(resp), err)
	}
	return out, nil
}

// what names the request resp answers, for error messages.
func what(resp *http.Response) string {
	if resp.Request == nil || resp.Request.URL == nil {
		return "response"
	}
	return resp.Request.Method + " " + resp.Request.URL.Path
}

// limit converts a page size: 0 means the server's default.
func limit(n int) (*api.LimitQuery, error) {
	switch {
	case n == 0:
		return nil, nil
	case n < 0 || n > math.MaxInt32:
		return nil, fmt.Errorf("berth client: limit %d out of range", n)
	}
	l := api.LimitQuery(n)
	return &l, nil
}

// optional returns a pointer to s, or nil for "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optionalSlice returns a pointer to a copy of s, or nil when s is empty.
func optionalSlice(s []string) *[]string {
	if len(s) == 0 {
		return nil
	}
	c := append([]string(nil), s...)
	return &c
}
