package hostsock

import (
	"context"
	"net/http"
	"time"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// protocol is the part of a host socket that depends on how the host arrived: a runner
// (runner.go) or an envoy (envoy.go). One value serves one socket; the conn does the rest
// and calls back into it.
type protocol interface {
	info() protocolInfo
	// handshake checks the connect request, runs the init exchange and registers the host
	// (conn.register). A frame the host sent in place of its init, to be handled once the
	// stored commands are replayed, is returned as later.
	handshake(c *conn, r *http.Request) (later []byte, err error)
	// handle decodes one binary frame from the host and acts on it through the conn; an
	// error ends the socket.
	handle(c *conn, frame []byte) error
	// encode is m in the host's protocol; nil when the protocol has no such message.
	encode(c *conn, m toHost) ([]byte, error)
	// recordPong records a pong in tx, one of the pong workers' batch; the result goes to
	// afterPong once the batch committed (or failed, with err).
	recordPong(ctx context.Context, tx udb.Transaction, j *pongJob) error
	afterPong(c *conn, j pongJob)
	// stopping handles the host's own stopping message.
	stopping(c *conn) error
	// release is the store's part of the socket's end, committed with the release of its
	// ownership record.
	release(ctx context.Context, tx udb.Transaction, c *conn) error
	// hosted checks, serializably in r, that c is its host's current socket (else a
	// *.stale_connection error) and that actor aid is placed on the host.
	hosted(ctx context.Context, r udb.ReadTransaction, c *conn, aid id.ID) error
}

// protocolInfo is what a protocol is, beside what it does.
type protocolInfo struct {
	kind string // "runner" or "envoy", for logs
	// pingAtOnce: the first ping goes out right after registration, not an interval later.
	pingAtOnce bool
	// windowed: request and response bodies are paced by windows (envoy v8).
	windowed bool
	// resumable: a hibernated WebSocket resumes on the socket (runners).
	resumable bool
}

const (
	kindRunner = "runner"
	kindEnvoy  = "envoy"
)

// firstPing is how long after registration the first ping goes out.
func (i protocolInfo) firstPing(interval time.Duration) time.Duration {
	if i.pingAtOnce {
		return 0
	}
	return wsconn.Jitter(interval)
}

// toHost is a message of the engine to a host, before its protocol encodes it.
type toHost interface{ toHost() }

type (
	pingMsg      struct{ ts int64 }
	commandsMsg  []actor.Command
	ackEventsMsg []actor.Checkpoint
	kvResponse   struct {
		requestID uint32
		data      proto.KvResponseData
	}
	// tunnelMsg is one gateway message of a request, in the runner protocol's shape
	// (the gateway's).
	tunnelMsg struct {
		id   proto.MessageID
		kind proto.ToClientTunnelMessageKind
	}
	// bodyConsumed returns response-body window to the host (windowed protocols).
	bodyConsumed struct {
		id       proto.MessageID
		consumed uint64
	}
)

func (pingMsg) toHost()      {}
func (commandsMsg) toHost()  {}
func (ackEventsMsg) toHost() {}
func (kvResponse) toHost()   {}
func (tunnelMsg) toHost()    {}
func (bodyConsumed) toHost() {}
