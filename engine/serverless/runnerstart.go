package serverless

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/berthhq/berth/keys"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// RunnerStart names the runner-pool request to make: pool Name of namespace NamespaceName,
// with config Config.
type RunnerStart struct {
	Config        keys.ServerlessRunnerConfig
	Name          string
	NamespaceName string
}

// maxEventLine bounds one line of a runner's event stream.
const maxEventLine = 64 << 10

// StartRunner makes one GET {url}/start request of a runner pool, which starts one runner
// (docs/serverless.md § 5.2), and reads its event stream until ctx ends (nil: the caller
// closed it, at the request's lifespan) or the stream does. onInit gets the runner id of
// each init event. A stream that ends is a *StartError for serverless_stream_ended_early
// (errors.Is(err, ErrEndedEarly)); an init that does not decode closes the request with
// serverless_invalid_sse_payload.
func (s *Starter) StartRunner(ctx context.Context, in RunnerStart, onInit func(runnerID string)) error {
	h := http.Header{}
	h.Set("X-Rivet-Total-Slots", strconv.FormatUint(uint64(in.Config.SlotsPerRunner), 10))
	h.Set("X-Rivet-Runner-Name", in.Name)
	h.Set("X-Rivet-Namespace-Name", in.NamespaceName)
	h.Set("X-Rivet-Namespace-Id", in.NamespaceName) // deprecated; the name, as the reference sends it
	res, err := s.open(ctx, http.MethodGet, in.Config, nil, h)
	if err != nil || res == nil {
		return err
	}
	defer res.Body.Close()
	return readRunnerEvents(ctx, res.Body, onInit)
}

// ErrEndedEarly is a /start stream that ended before the engine closed it.
var ErrEndedEarly = errEndedEarly

// readRunnerEvents reads a runner's event stream: `message` events (the default name)
// carry base64(u16 LE protocol version + ToServerlessServer), whose init is passed to
// onInit; other events (`ping`) are ignored.
func readRunnerEvents(ctx context.Context, r io.Reader, onInit func(runnerID string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxEventLine)
	name, data, hasData := "", strings.Builder{}, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if hasData && (name == "" || name == "message") {
				if err := runnerInit(data.String(), onInit); err != nil {
					return err
				}
			}
			name, hasData = "", false
			data.Reset()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				if hasData {
					data.WriteByte('\n')
				}
				if data.Len()+len(value) > maxEventLine {
					return invalidPayload("message too large", data.String())
				}
				data.WriteString(value)
				hasData = true
			}
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

// runnerInit decodes one `message` event's data.
func runnerInit(data string, onInit func(runnerID string)) error {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return invalidPayload("invalid base64 message", data)
	}
	m, _, err := proto.DecodeServerlessInit(b)
	if err != nil {
		return invalidPayload("invalid payload", data)
	}
	onInit(m.RunnerID)
	return nil
}

// invalidPayload is serverless_invalid_sse_payload for raw, cut to maxErrorBody bytes at
// a character boundary.
func invalidPayload(message, raw string) *StartError {
	cut := raw
	if len(cut) > maxErrorBody {
		cut = string(cutUTF8([]byte(cut[:maxErrorBody])))
	}
	return &StartError{Pool: map[string]any{"serverless_invalid_sse_payload": map[string]any{"message": message, "raw_payload": cut}},
		cause: errors.New(message)}
}
