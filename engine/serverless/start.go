package serverless

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/udb"
)

// Starter makes the POST {url}/start requests of serverless envoy pools: one per actor
// start, whose body carries the start command, kept open while the endpoint streams its
// events (docs/serverless.md § 4). It is engine/pegboard's ServerlessStarter.
type Starter struct {
	DB     udb.Database
	Client *http.Client // the checked client (pkg/outbound); no timeout of its own
	Policy outbound.Policy
	// Endpoint is this datacenter's public URL, sent as x-rivet-endpoint; Token the admin
	// token, sent as x-rivet-token ("" for none).
	Endpoint, Token string
	UserAgent       string
	Log             *slog.Logger
}

// maxErrorBody bounds the part of a failing answer's body an error keeps, in bytes (cut at
// a character boundary).
const maxErrorBody = 512

// StartError is a /start request that failed: Pool is the runner_pool_error it stands for
// (docs/serverless.md § 6): an object, or a string for the variants without fields.
type StartError struct {
	Pool  any
	cause error
}

func (e *StartError) Error() string { return fmt.Sprintf("serverless /start: %v", e.cause) }
func (e *StartError) Unwrap() error { return e.cause }

// PoolError is e's runner_pool_error as JSON.
func (e *StartError) PoolError() json.RawMessage {
	b, err := json.Marshal(e.Pool)
	if err != nil {
		return json.RawMessage(`"internal_error"`)
	}
	return b
}

func httpError(status int, body []byte) *StartError {
	return &StartError{Pool: map[string]any{"serverless_http_error": map[string]any{"status_code": status, "body": string(body)}},
		cause: fmt.Errorf("answered %d", status)}
}

func connectionError(err error) *StartError {
	return &StartError{Pool: map[string]any{"serverless_connection_error": map[string]any{"message": err.Error()}}, cause: err}
}

var errEndedEarly = errors.New("the stream ended before the actor stopped")

// Start makes cmd's /start request and reads its events until the endpoint says
// `stopping`, the stream ends, the pool's request_lifespan passes or ctx ends. At
// request_lifespan − drain_grace_period it calls drain, which moves the actor away; the
// stream then has the grace period to end (docs/serverless.md § 4.4).
func (s *Starter) Start(ctx context.Context, cmd actor.Command, drain func()) error {
	aid := cmd.Checkpoint.ActorID
	type pool struct {
		ns   string
		name string
		e    runnerconfig.Entry
	}
	p, err := udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) (pool, error) {
		st, found, err := keys.Get(ctx, r.Snapshot(), keys.ActorStateKey{ActorID: aid})
		if err != nil || !found {
			return pool{}, errors.Join(errors.New("the actor is gone"), err)
		}
		ns, err := namespace.Get(ctx, r, namespace.GetInput{NamespaceID: st.Namespace})
		if err != nil {
			return pool{}, err
		}
		e, err := runnerconfig.Get(ctx, r, runnerconfig.GetInput{Namespace: st.Namespace, Name: st.Selector})
		return pool{ns.Name, st.Selector, e}, err
	})
	if err != nil {
		return &StartError{Pool: "internal_error", cause: err}
	}
	sl := p.e.Config.Serverless
	if sl == nil || p.e.ProtocolVersion == nil {
		return &StartError{Pool: "internal_error", cause: errors.New("the pool is not a serverless envoy pool")}
	}
	body, err := hostsock.EnvoyStartBody(cmd, *p.e.ProtocolVersion)
	if err != nil {
		return &StartError{Pool: "internal_error", cause: err}
	}
	lifespan := time.Duration(sl.RequestLifespan) * time.Second
	ctx, cancel := context.WithTimeout(ctx, lifespan)
	defer cancel()
	grace := min(time.Duration(sl.DrainGracePeriod)*time.Second, lifespan)
	stop := time.AfterFunc(lifespan-grace, drain)
	defer stop.Stop()
	h := http.Header{}
	h.Set("X-Rivet-Pool-Name", p.name)
	h.Set("X-Rivet-Namespace-Name", p.ns)
	res, err := s.open(ctx, http.MethodPost, *sl, bytes.NewReader(body), h)
	if err != nil || res == nil {
		return err
	}
	defer res.Body.Close()
	return readEvents(ctx, res.Body)
}

// open makes a /start request (method, with body) to pool sl's endpoint with the pool's
// headers, then extra, then the engine's (x-rivet-endpoint, x-rivet-token, accept,
// user-agent), and checks that it answers an event stream. A nil response with a nil
// error is a request ctx ended (stopped, or its lifespan passed); a failure is a
// *StartError naming the pool error (docs/serverless.md §§ 4.6 and 5.4).
func (s *Starter) open(ctx context.Context, method string, sl keys.ServerlessRunnerConfig, body io.Reader, extra http.Header) (*http.Response, error) {
	if _, err := s.Policy.CheckURL(sl.URL); err != nil {
		return nil, urlError(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(strings.TrimSpace(sl.URL), "/")+"/start", body)
	if err != nil {
		return nil, connectionError(err)
	}
	for k, v := range sl.Headers {
		if validHeader(k, v) {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("X-Rivet-Endpoint", normalizedEndpoint(s.Endpoint))
	for k, vs := range extra {
		req.Header[k] = vs
	}
	if s.Token != "" {
		req.Header.Set("X-Rivet-Token", s.Token)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", s.UserAgent)
	res, err := s.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil // stopped, or the lifespan passed
		}
		return nil, urlError(err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return nil, httpError(res.StatusCode, cutUTF8(b))
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		res.Body.Close()
		return nil, connectionError(fmt.Errorf("expected Content-Type header to be text/event-stream, received %q", res.Header.Get("Content-Type")))
	}
	return res, nil
}

// urlError is a refused destination (serverless_destination_blocked) or another failure to
// reach the endpoint (serverless_connection_error).
func urlError(err error) *StartError {
	if b := outbound.Blocked(err); b != nil {
		return &StartError{Pool: map[string]any{"serverless_destination_blocked": map[string]any{"reason": b.Error()}}, cause: err}
	}
	return connectionError(err)
}

// readEvents reads the endpoint's event stream until a `stopping` event (nil), its end
// (errEndedEarly) or ctx's (nil). Other events (`ping`) are ignored.
func readEvents(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event:"); ok && strings.TrimSpace(name) == "stopping" {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return connectionError(err)
	}
	return &StartError{Pool: "serverless_stream_ended_early", cause: errEndedEarly}
}

// normalizedEndpoint is u with a "/" path when it has none, as the reference sends it.
func normalizedEndpoint(u string) string {
	if i := strings.Index(u, "://"); i >= 0 && !strings.Contains(u[i+3:], "/") {
		return u + "/"
	}
	return u
}

// cutUTF8 drops the last character's bytes when the cut at maxErrorBody split it (the
// reference's engine panics on such a body: docs/serverless.md § 8).
func cutUTF8(b []byte) []byte {
	for range utf8.UTFMax - 1 {
		if r, size := utf8.DecodeLastRune(b); len(b) == 0 || r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
