//go:build e2e

package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// latency is what `probe hello` prints.
type latency struct {
	N      int   `json:"n"`
	Failed int   `json:"failed"`
	P50    int64 `json:"p50_us"`
	P90    int64 `json:"p90_us"`
	P99    int64 `json:"p99_us"`
	Max    int64 `json:"max_us"`
	Total  int64 `json:"total_us"`
}

func (l latency) String() string {
	return fmt.Sprintf("p50 %d µs, p90 %d µs, p99 %d µs, max %d µs, %.0f req/s (%d requests, %d failed)",
		l.P50, l.P90, l.P99, l.Max, float64(l.N)/(float64(l.Total)/1e6), l.N, l.Failed)
}

func parseLatency(t *testing.T, where string, out []byte, err error) latency {
	t.Helper()
	var l latency
	if jerr := json.Unmarshal(out, &l); jerr != nil || err != nil {
		var said []byte
		if ee, ok := err.(*exec.ExitError); ok {
			said = ee.Stderr
		}
		t.Fatalf("probe hello %s: %v, %v: %s%s", where, err, jerr, out, said)
	}
	return l
}

// TestHelloLatencyThroughTheTunnel measures, in one run: Hello round trips from a container
// through the app's forward (one TCP connection each, as krad makes them), as the host's lead a:1
// (a connection through a forward speaks for its host's environment only: "Client" is refused
// there), beside Hello from this machine to the bus directly, as "Client"; `krad api` as a whole
// process on both sides; and the time to connect a fresh host and an already prepared one. It
// asserts no figure, and runs beside the other scenarios in the suite: for figures to quote, run
// it alone (go test -tags e2e -run TestHelloLatencyThroughTheTunnel -v ./e2e/scenarios).
func TestHelloLatencyThroughTheTunnel(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 42, singleOptions{})
	a, u, app, c := s.a, s.u, s.app, s.c
	measured(t, "fresh host a (krad installed): connected and prepared %s after the app started", ms(c.after))
	u.readAPI()
	remote := hostProbe(t, a)
	local := probe(t)
	tokenFile := tokenFiles(t, a)[0]

	hello := func(where string, n int) latency {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var cmd *exec.Cmd
		if where == "tunnel" {
			cmd = a.Command(ctx, "krad", remote, "hello", "-n", strconv.Itoa(n), "-endpoint", c.forward, "-token-file", tokenFile, "-terminal", "a:1")
		} else {
			cmd = exec.CommandContext(ctx, local, "hello", "-n", strconv.Itoa(n), "-api-json", u.apiJSON())
			cmd.Env = u.env()
		}
		out, err := cmd.Output()
		return parseLatency(t, where, out, err)
	}
	hello("tunnel", 200) // warm-up
	hello("direct", 200)
	for round := 1; round <= 3; round++ {
		tl, dl := hello("tunnel", 2000), hello("direct", 2000)
		measured(t, "Hello round %d, from the container through the forward: %s", round, tl)
		measured(t, "Hello round %d, from this machine to the bus directly: %s", round, dl)
	}

	// krad api as a whole process, 100 in a row, on each side: on the host as the lead's
	// terminal would run it.
	const loop = `s=$(date +%s%N); i=0; while [ $i -lt 100 ]; do "$1" api >/dev/null || exit 1; i=$((i+1)); done; e=$(date +%s%N); echo $(( (e - s) / 100000 ))`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rcmd := a.Command(ctx, "krad", "env", "KRAD_ADE_ENDPOINT="+c.forward, "KRAD_ADE_TOKEN_FILE="+tokenFile, "KRAD_ADE_TERMINAL=a:1",
		"bash", "-c", loop, "bash", kradBin()+"/krad")
	rout, err := rcmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("krad api on the host: %v: %s%s", err, rout, ee.Stderr)
	} else if err != nil {
		t.Fatalf("krad api on the host: %v: %s", err, rout)
	}
	lcmd := exec.CommandContext(ctx, "bash", "-c", loop, "bash", u.bin+"/krad")
	lcmd.Env = u.env()
	lout, err := lcmd.Output()
	if err != nil {
		t.Fatalf("krad api on this machine: %v: %s", err, lout)
	}
	measured(t, "krad api as a process: %s µs each on the host (static krad, through the forward), %s µs each on this machine (api.json, directly)",
		strings.TrimSpace(string(rout)), strings.TrimSpace(string(lout)))

	// An already prepared host: the app again, with krad installed there and its tmux running.
	app.stop(syscall.SIGTERM)
	app = u.start()
	c = app.connected("a", 60*time.Second)
	measured(t, "prepared host a: connected %s after the app started", ms(c.after))
}
