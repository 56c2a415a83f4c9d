package cli

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/local"
)

// run runs one command line in-process and returns what it wrote and its exit code.
func run(t *testing.T, env map[string]string, opts Options, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), append([]string{"/usr/bin/krad"}, args...), MapEnv(env), strings.NewReader(""), &out, &errOut, opts)
	return out.String(), errOut.String(), code
}

// newToken makes a fresh token.
func newToken(t *testing.T) api.Token {
	t.Helper()
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// startBus starts a real bus (package local) with no app behind it, which answers Hello with
// build "test" and pid, and returns its endpoint and bus token.
func startBus(t *testing.T, pid int) (string, api.Token) {
	t.Helper()
	return serve(t, local.Config{PID: pid})
}

// serve starts a real bus on cfg, with fresh tokens and build "test", until the test ends, and
// returns its endpoint and bus token.
func serve(t *testing.T, cfg local.Config) (string, api.Token) {
	t.Helper()
	s := apptest.Serve(t, cfg)
	return s.Bus.Addr(), s.Token
}

// silentPeer is a loopback endpoint that takes connections and holds them open, silent, until the
// test ends: an HTTP server waiting for the rest of a request, a frozen SSH link behind a forward.
func silentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, conn)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// deadEndpoint is a loopback endpoint where nothing listens: a port the system gave out and took
// back.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startPeer starts a listener that reads one line per connection and answers it with answer, as
// no real bus would: a peer that misbehaves on purpose (another API version, another program on
// the port).
func startPeer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	reply := []byte(answer)
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(conn).ReadString('\n')
			_, _ = conn.Write(reply)
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// found is a Discover that finds d, as cmd/krad's does after reading api.json.
func found(d Discovered) Options {
	return Options{Discover: func(func(string) string) (Discovered, error) { return d, nil }}
}
