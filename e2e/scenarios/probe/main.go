//go:build e2e

// Command probe is the scenarios' helper, built static and run both on this machine and on the
// test hosts:
//
//	probe hello -n N -endpoint ADDR -token-file FILE [-terminal E:N]
//	                                                   N Hello round trips through ADDR, with
//	                                                   the token of an owner-only token file
//	probe hello -n N -api-json FILE [-terminal E:N]    the same against the bus api.json names
//	probe squat [-network tcp6] -addr ADDR             listen on ADDR as another user would, and
//	                                                   say how many bytes each connection sent
//	probe sockdiag                                     say whether the kernel's sock_diag netlink
//	                                                   answers here: "open", or "refused: ERR"
//
// hello makes each request the way krad does, one TCP connection each, as "Client" or, with
// -terminal, as terminal E:N (through an SSH host's forward, where the bus refuses "Client", a
// terminal of that host's environment), and prints one JSON line: the count, the failures and the
// latency's p50, p90, p99 and max in microseconds; when one fails, it says why the first did.
// squat prints "listening ADDR", then a line "conn N: B bytes" per connection (it reads for up to
// 2 s, or until the client closes); it never prints what it read.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/tokenfile"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe hello|squat …")
		os.Exit(5)
	}
	var err error
	switch os.Args[1] {
	case "hello":
		err = hello(os.Args[2:])
	case "squat":
		err = squat(os.Args[2:])
	case "sockdiag":
		err = sockdiag()
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: %v\n", err)
		os.Exit(1)
	}
}

// Latency is hello's answer.
type Latency struct {
	N      int   `json:"n"`
	Failed int   `json:"failed"`
	P50    int64 `json:"p50_us"`
	P90    int64 `json:"p90_us"`
	P99    int64 `json:"p99_us"`
	Max    int64 `json:"max_us"`
	Total  int64 `json:"total_us"`
}

func hello(args []string) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	n := fs.Int("n", 1000, "round trips")
	endpoint := fs.String("endpoint", "", "the bus or its forward")
	tokenFile := fs.String("token-file", "", "an owner-only token file")
	apiJSON := fs.String("api-json", "", "the app's api.json, for endpoint and token")
	terminal := fs.String("terminal", "", `call as this terminal, E:N, rather than as "Client"`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := &api.Client{Endpoint: *endpoint, From: api.FromClient}
	if *terminal != "" {
		id, err := api.ParseTerminalID(*terminal)
		if err != nil {
			return fmt.Errorf("-terminal %q: %w", *terminal, err)
		}
		c.From = api.FromTerminal(id)
	}
	switch {
	case *apiJSON != "":
		f, err := discovery.Read(*apiJSON)
		if err != nil {
			return err
		}
		c.Endpoint, c.Token = f.Endpoint, f.Token
	case *tokenFile != "":
		tok, err := tokenfile.Read(*tokenFile)
		if err != nil {
			return err
		}
		c.Token = tok
	default:
		return fmt.Errorf("hello needs -token-file or -api-json")
	}
	var lat []time.Duration
	failed := 0
	var firstErr error
	start := time.Now()
	for range *n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		a, err := c.Call(ctx, api.NewRequest(api.Hello, nil))
		d := time.Since(t0)
		cancel()
		if err != nil || a.Name != "Hello" {
			if failed == 0 {
				firstErr = err
				if err == nil {
					firstErr = fmt.Errorf("the answer was %s, not Hello", a.Name)
				}
			}
			failed++
			continue
		}
		lat = append(lat, d)
	}
	total := time.Since(start)
	slices.Sort(lat)
	at := func(q float64) int64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(q*float64(len(lat))+0.5) - 1
		return lat[max(0, min(i, len(lat)-1))].Microseconds()
	}
	out, _ := json.Marshal(Latency{N: *n, Failed: failed, P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1), Total: total.Microseconds()})
	fmt.Println(string(out))
	if failed > 0 {
		return fmt.Errorf("%d of %d Hello round trips failed; the first: %w", failed, *n, firstErr)
	}
	return nil
}

func squat(args []string) error {
	fs := flag.NewFlagSet("squat", flag.ContinueOnError)
	addr := fs.String("addr", "", "where to listen")
	network := fs.String("network", "tcp", "Go's network: tcp6 on [::]:PORT listens on IPv6 only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen(*network, *addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	for i := 1; ; i++ {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.Copy(io.Discard, c)
		c.Close()
		fmt.Printf("conn %d: %d bytes\n", i, b)
	}
}
