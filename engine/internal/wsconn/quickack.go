package wsconn

import (
	"net"
	"syscall"
)

// quickAckConn is a connection that asks the kernel to acknowledge what it received at once,
// after every read. A peer that writes without TCP_NODELAY (rivetkit's envoy socket) holds a
// small write back (Nagle) until its earlier one is acknowledged; when the engine has nothing
// to send back at once, Linux delays that acknowledgement by up to 40 ms. TCP_QUICKACK does
// not stay set: the kernel leaves quick-ack mode by itself, so it is set again after each read
// (docs/benchmarks.md#rivetkit-2319).
type quickAckConn struct {
	net.Conn
	raw syscall.RawConn
}

// withQuickAck wraps c when it is (or wraps) a TCP socket whose options can be set; else c.
func withQuickAck(c net.Conn) net.Conn {
	raw := rawConn(c)
	if raw == nil || quickAck(raw) != nil {
		return c
	}
	return &quickAckConn{Conn: c, raw: raw}
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		_ = quickAck(c.raw) // a socket that refuses it reads on with delayed acknowledgements
	}
	return n, err
}

// rawConn finds the socket under c's wrappers (TLS, connection limits, PROXY protocol), which
// name what they wrap with NetConn or Raw; nil when there is none.
func rawConn(c net.Conn) syscall.RawConn {
	for range 8 { // wrappers nest a few deep
		switch w := c.(type) {
		case syscall.Conn:
			raw, err := w.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		case interface{ NetConn() net.Conn }:
			c = w.NetConn()
		case interface{ Raw() net.Conn }:
			c = w.Raw()
		default:
			return nil
		}
	}
	return nil
}
