package main

import (
	"net"
	"strings"
)

// sdNotifier returns a function that sends a state to systemd's notification socket, the
// unix datagram socket NOTIFY_SOCKET names (a path, or an abstract name after "@"), so that a
// unit of Type=notify knows when berth serves, reloads and stops. Without NOTIFY_SOCKET it
// returns nil. Sending is best effort: a failure changes nothing for the engine.
func sdNotifier(socket string) func(state string) {
	if socket == "" || (socket[0] != '/' && socket[0] != '@') {
		return nil
	}
	addr := &net.UnixAddr{Name: socket, Net: "unixgram"}
	if strings.HasPrefix(socket, "@") {
		addr.Name = "\x00" + socket[1:]
	}
	return func(state string) {
		c, err := net.DialUnix("unixgram", nil, addr)
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte(state))
	}
}
