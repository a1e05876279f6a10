package sidebyside

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Client names how the HTTP measurements send their requests.
type Client int

const (
	// RawClient writes each GET on its keep-alive connection and reads the answer on the
	// same goroutine: what is measured is the target, not the client. The figures reported.
	RawClient Client = iota
	// NetHTTPClient is Go's net/http client with one connection. Each request passes through
	// its connection's writer and reader goroutines, two hand-offs that cost ~0.1–0.2 ms of
	// wake-ups on a 2-core VM and CPU the targets share; reported beside the raw figures.
	NetHTTPClient
)

func (c Client) String() string {
	if c == NetHTTPClient {
		return "net/http"
	}
	return "raw"
}

// Conn sends GETs to one target, one at a time, on one keep-alive connection.
type Conn interface {
	// Get sends GET path from client address from and checks the answer is 200 "ok".
	Get(ctx context.Context, path, from string) error
	Close()
}

// Dial returns a Conn of kind c to t; the connection is made by the first Get.
func (c Client) Dial(t *Target) Conn {
	if c == NetHTTPClient {
		client, done := OneConn()
		return &netHTTPConn{base: t.HTTP, client: client, done: done}
	}
	u, err := url.Parse(t.HTTP)
	if err != nil {
		return &rawConn{err: err}
	}
	return &rawConn{host: u.Host, prefix: u.Path}
}

type netHTTPConn struct {
	base   string
	client *http.Client
	done   func()
}

func (c *netHTTPConn) Get(ctx context.Context, path, from string) error {
	return Get(ctx, c.client, c.base+path, from)
}

func (c *netHTTPConn) Close() { c.done() }

// rawConn is an HTTP/1.1 connection driven by hand: the request is a few fixed bytes and
// the answer is parsed with http.ReadResponse. It dials again after the target closed it.
type rawConn struct {
	host   string // host:port
	prefix string // the target URL's path, before each request's path
	err    error  // a bad target URL

	nc  net.Conn
	br  *bufio.Reader
	req []byte // reused request buffer
}

// rawTimeout bounds one request and its answer, as OneConn's client timeout does.
const rawTimeout = 30 * time.Second

// rawAnswerLimit bounds the body read of one answer (the echo actor answers "ok").
const rawAnswerLimit = 1 << 16

func (c *rawConn) Get(ctx context.Context, path, from string) error {
	if c.err != nil {
		return c.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.nc == nil {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", c.host)
		if err != nil {
			return err
		}
		c.nc, c.br = nc, bufio.NewReader(nc)
	}
	// rawTimeout bounds a Get that nothing ends; ctx ends one through the same deadline
	// (ctx.Err is set by then, so the error is ctx's).
	nc := c.nc
	err := nc.SetDeadline(time.Now().Add(rawTimeout))
	if err == nil {
		stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
		err = c.roundTrip(path, from)
		stop()
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("GET %s%s%s: %w", c.host, c.prefix, path, err)
	}
	return nil
}

func (c *rawConn) roundTrip(path, from string) error {
	c.req = append(c.req[:0], "GET "...)
	c.req = append(c.req, c.prefix...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.host...)
	c.req = append(c.req, "\r\nX-Forwarded-For: "...)
	c.req = append(c.req, from...)
	c.req = append(c.req, "\r\n\r\n"...)
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, rawAnswerLimit))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("%d %q", resp.StatusCode, body)
	}
	if resp.Close {
		c.Close() // the target ends the connection: the next Get dials again
	}
	return nil
}

func (c *rawConn) Close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc, c.br = nil, nil
	}
}
