//go:build !linux

package wsconn

import (
	"errors"
	"syscall"
)

// quickAck: TCP_QUICKACK is Linux's; elsewhere the socket keeps the system's behaviour.
func quickAck(syscall.RawConn) error { return errors.ErrUnsupported }
