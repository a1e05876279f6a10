package wsconn

import "errors"

// ErrNoSocket: the host's socket is not held here (it is disconnected, or held by another
// node).
var ErrNoSocket = errors.New("no socket of that host here")

// ErrTunnelClosed: the host's socket ended, or the tunnel was closed.
var ErrTunnelClosed = errors.New("tunnel closed")
