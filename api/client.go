package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// Client makes requests to a bus. Its zero value is not usable: set Endpoint, Token and From.
type Client struct {
	// Endpoint is host:port of the bus, a loopback address such as 127.0.0.1:52144.
	Endpoint string
	// Token is the bus token (or the lead token for a Lead caller).
	Token Token
	// From is who is calling.
	From Caller
	// Dial opens the connection; nil means a plain TCP dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Verify, if set, runs on each new connection before the token is written to it; an error
	// stops the request. It is where a caller checks who owns the listener.
	Verify func(net.Conn) error
}

// UnreachableError says that nothing answered at the endpoint.
type UnreachableError struct {
	Endpoint string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no agents bus answers at %s: %v", e.Endpoint, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// ErrNotLoopback is returned for an endpoint that is not a loopback address: the bus never listens
// anywhere else, and the token must not travel off this computer.
var ErrNotLoopback = errors.New("the endpoint is not a loopback address (127.0.0.0/8 or [::1])")

// CheckEndpoint checks that endpoint is host:port with a loopback IP host.
func CheckEndpoint(endpoint string) error {
	ap, err := netip.ParseAddrPort(endpoint)
	if err != nil {
		return fmt.Errorf("the endpoint must be like 127.0.0.1:52144")
	}
	if !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return ErrNotLoopback
	}
	return nil
}

func (c *Client) open(ctx context.Context, req Request) (net.Conn, *bufio.Reader, error) {
	if err := CheckEndpoint(c.Endpoint); err != nil {
		return nil, nil, err
	}
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", c.Endpoint)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &UnreachableError{Endpoint: c.Endpoint, Err: err}
	}
	if c.Verify != nil {
		if err := c.Verify(conn); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	env := Envelope{APIVersion: Version, Token: c.Token, From: c.From, Request: req}
	if err := WriteLine(conn, env); err != nil {
		conn.Close()
		return nil, nil, &UnreachableError{Endpoint: c.Endpoint, Err: err}
	}
	return conn, bufio.NewReader(conn), nil
}

// Call makes one request and returns its answer. An error answer is returned as the error too:
// an *Error, or ErrTimedOut. An answer longer than MaxAnswerLine is an error wrapping
// ErrAnswerTooLong. Cancelling ctx closes the connection, which cancels the request in
// the app.
func (c *Client) Call(ctx context.Context, req Request) (Answer, error) {
	conn, r, err := c.open(ctx, req)
	if err != nil {
		return Answer{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	a, err := readAnswer(r)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{}, fmt.Errorf("read the answer from %s: %w", c.Endpoint, err)
	}
	return a, a.Err()
}

// Subscribe makes a streaming request and calls fn with each answer line until the bus closes the
// stream (nil), ctx is done (ctx.Err()), fn returns an error (that error), or an error answer
// arrives (that error). A line longer than MaxAnswerLine ends it with an error wrapping
// ErrAnswerTooLong.
func (c *Client) Subscribe(ctx context.Context, req Request, fn func(Answer) error) error {
	conn, r, err := c.open(ctx, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(timeZero)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		a, err := readAnswer(r)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var e *Error
			if errors.As(err, &e) && errors.Is(e.cause, io.EOF) {
				return nil
			}
			return fmt.Errorf("read from %s: %w", c.Endpoint, err)
		}
		if err := a.Err(); err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	}
}

func readAnswer(r *bufio.Reader) (Answer, error) {
	line, err := ReadLine(r, MaxAnswerLine)
	if errors.Is(err, errLineTooLong) {
		return Answer{}, ErrAnswerTooLong
	}
	if err != nil {
		return Answer{}, err
	}
	var a Answer
	if err := a.UnmarshalJSON(line); err != nil {
		return Answer{}, fmt.Errorf("the answer is not valid: %w", err)
	}
	return a, nil
}

var timeZero = time.Time{}
