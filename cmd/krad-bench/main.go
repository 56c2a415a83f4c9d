// Command krad-bench measures the agents bus of krad-ade against a baseline measured in the same
// run, so that the figures in BENCHMARKS.md say how much the bus costs, not how fast this
// computer is.
//
//	krad-bench hello --bin DIR      Hello round trips, one TCP connection each, against the
//	                                real app and a plain Go line server
//	krad-bench requests --bin DIR   the same for a List and for a Hello with its keys in
//	                                another order, which go the bus's whole way
//	krad-bench process --bin DIR    `krad api` as a whole process against printf | nc
//
// DIR holds krad-ade, krad and krad-ade-agents as the README's build makes them; krad-bench
// builds nothing. It starts DIR/krad-ade with a temporary XDG_CONFIG_HOME, reads the endpoint and
// the token from the api.json the app writes there, and stops the app with SIGTERM at the end.
// Everything stays on the loopback interface, request counts are fixed and a global timeout
// bounds the run. The token is never printed: it lives in an [api.Token], goes on the wire in
// request lines, and reaches `sh` through the environment only.
//
// The output is Markdown (or JSON with --json) meant to be pasted into BENCHMARKS.md. The
// command exits with 1 when any request failed, and with 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
