package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krad-ade/krad/api"
)

// target is a server under load: where it listens and the request line every client writes.
type target struct {
	name string // "krad-ade" or "baseline"
	addr string
	pid  int // the server's process, whose CPU time is read around each round; 0 if unknown
	// line is the request envelope with its newline: the Hello api.Client writes, or another
	// request of `krad-bench requests`. It holds the token: it goes on the wire and nowhere else.
	line []byte
	// want is the answer a request must get to count; "" is Hello's.
	want api.AnswerName
}

// String keeps the request line, and so the token, out of anything that prints a target.
func (t *target) String() string { return t.name + " at " + t.addr }

// helloLine is the envelope of a Hello from a Client caller, the line api.Client writes.
func helloLine(token api.Token) ([]byte, error) {
	b, err := json.Marshal(api.Envelope{APIVersion: api.Version, Token: token, From: api.FromClient, Request: api.NewRequest(api.Hello, nil)})
	if err != nil {
		return nil, fmt.Errorf("encode the hello envelope: %w", err)
	}
	return append(b, '\n'), nil
}

// newTarget checks that addr is a loopback endpoint and makes the target.
func newTarget(name, addr string, token api.Token) (*target, error) {
	if err := api.CheckEndpoint(addr); err != nil {
		return nil, fmt.Errorf("%s listens at %s: %w", name, addr, err)
	}
	line, err := helloLine(token)
	if err != nil {
		return nil, err
	}
	return &target{name: name, addr: addr, line: line}, nil
}

// client is one load client: its dialer and its reader, reused from request to request so that
// the client's own cost stays small and the same for every server.
type client struct {
	dialer  net.Dialer
	r       *bufio.Reader
	timeout time.Duration
}

func newClient(timeout time.Duration) *client {
	return &client{r: bufio.NewReaderSize(nil, 512), timeout: timeout}
}

// request makes one request the way real clients do: a new connection, the envelope line, the
// answer line, close. It returns the latency from the dial to the answer's last byte and the
// answer line. A failed request is a *failure.
func (c *client) request(ctx context.Context, t *target) (time.Duration, []byte, error) {
	start := time.Now()
	conn, err := c.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return 0, nil, &failure{class: "dial", err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(c.timeout))
	if _, err := conn.Write(t.line); err != nil {
		return 0, nil, &failure{class: "write", err: err}
	}
	c.r.Reset(conn)
	line, err := api.ReadLine(c.r, api.MaxAnswerLine)
	if err != nil {
		return 0, nil, &failure{class: "read", err: err}
	}
	lat := time.Since(start)
	c.r.Reset(nil)
	if err := checkAnswer(line, cmp.Or(t.want, api.AnswerHello)); err != nil {
		return 0, nil, err
	}
	return lat, line, nil
}

// checkAnswer checks that line is an answer called want; a Hello must be of this API version.
// An error answer is a failure of class "error answer CODE".
func checkAnswer(line []byte, want api.AnswerName) error {
	var a api.Answer
	if err := a.UnmarshalJSON(line); err != nil {
		return &failure{class: "bad answer", err: err}
	}
	var body json.RawMessage
	if err := a.Decode(want, &body); err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			return &failure{class: "error answer " + string(e.Code), err: err}
		}
		return &failure{class: "bad answer", err: err}
	}
	if want != api.AnswerHello {
		return nil
	}
	var h api.HelloAnswer
	if err := json.Unmarshal(body, &h); err != nil {
		return &failure{class: "bad answer", err: err}
	}
	if h.APIVersion != api.Version {
		return &failure{class: "bad answer", err: fmt.Errorf("hello answers api_version %d, want %d", h.APIVersion, api.Version)}
	}
	return nil
}

// failure is a failed request and the class it is counted under.
type failure struct {
	class string
	err   error
}

func (f *failure) Error() string { return f.class + ": " + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// Failures counts failed requests by class and keeps the first error of each class.
type Failures struct {
	Counts map[string]int    `json:"counts,omitempty"`
	First  map[string]string `json:"first,omitempty"`
}

// Total is the number of failed requests.
func (f *Failures) Total() int {
	n := 0
	for _, c := range f.Counts {
		n += c
	}
	return n
}

func (f *Failures) add(class string, n int, first string) {
	if n == 0 {
		return
	}
	if f.Counts == nil {
		f.Counts, f.First = map[string]int{}, map[string]string{}
	}
	f.Counts[class] += n
	if _, ok := f.First[class]; !ok && first != "" {
		f.First[class] = first
	}
}

func (f *Failures) record(err error) {
	var fl *failure
	if errors.As(err, &fl) {
		f.add(fl.class, 1, fl.err.Error())
		return
	}
	f.add("other", 1, err.Error())
}

func (f *Failures) merge(g Failures) {
	for class, n := range g.Counts {
		f.add(class, n, g.First[class])
	}
}

// String lists the failures, most frequent first.
func (f *Failures) String() string {
	classes := make([]string, 0, len(f.Counts))
	for c := range f.Counts {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b string) int {
		if d := f.Counts[b] - f.Counts[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, c := range classes {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d × %s", f.Counts[c], c)
		if s := f.First[c]; s != "" {
			fmt.Fprintf(&b, " (first: %s)", s)
		}
	}
	return b.String()
}

// round is what one round of load gave.
type round struct {
	latencies []time.Duration // one per successful request, unsorted
	elapsed   time.Duration
	failed    Failures
	cpu       time.Duration // the server's CPU time during the round; 0 if unknown
}

// load makes requests requests to t with clients clients at once, each taking the next request as
// soon as its last one is answered. Requests not made because ctx ended count as failures.
func load(ctx context.Context, t *target, clients, requests int, reqTimeout time.Duration) round {
	clients = max(1, min(clients, requests))
	var next atomic.Int64
	lats := make([][]time.Duration, clients)
	fails := make([]Failures, clients)
	var wg sync.WaitGroup
	cpu0, cpuOK := processCPU(t.pid)
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			c := newClient(reqTimeout)
			mine := make([]time.Duration, 0, requests/clients+1)
			for ctx.Err() == nil && next.Add(1) <= int64(requests) {
				lat, _, err := c.request(ctx, t)
				if err != nil {
					fails[i].record(err)
					continue
				}
				mine = append(mine, lat)
			}
			lats[i] = mine
		})
	}
	wg.Wait()
	r := round{elapsed: time.Since(start), latencies: slices.Concat(lats...)}
	if cpu1, ok := processCPU(t.pid); ok && cpuOK {
		r.cpu = cpu1 - cpu0
	}
	made := len(r.latencies)
	for _, f := range fails {
		made += f.Total()
		r.failed.merge(f)
	}
	if requests > made {
		r.failed.add("not made", requests-made, fmt.Sprint(context.Cause(ctx)))
	}
	return r
}

// percentile is the nearest-rank percentile of a sorted sample, in per mille (500 is the
// median, 990 the 99th percentile): the smallest value at least that share of the sample is at or
// below.
func percentile(sorted []time.Duration, permille int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*permille + 999) / 1000
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func mean(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}
