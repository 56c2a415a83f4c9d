package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/lockedwriter"
)

// benchRequest is one request of `krad-bench requests`. Unlike the canonical Client Hello line,
// which the bus recognises whole and answers at once, each goes the whole way: the envelope
// decoded, the token and version checked, the caller admitted and, for a List, the app's facts,
// the access table and the handler.
type benchRequest struct {
	label string
	want  api.AnswerName
	line  func(api.Token) ([]byte, error)
}

var benchRequests = []benchRequest{
	{"List", api.AnswerAgents, func(tok api.Token) ([]byte, error) {
		return envelopeLine(api.Envelope{APIVersion: api.Version, Token: tok, From: api.FromClient, Request: api.NewRequest(api.List, nil)})
	}},
	{"Hello, keys in another order", api.AnswerHello, reorderedHello},
}

// requestGoals are the goals for a request that is not the canonical Hello: with 16 clients (the
// concurrent mode) at least 80% of the baseline's requests per second, and with one a median
// latency within 1.5 times the baseline's.
func requestGoals(mode string) goals {
	if mode == "sequential" {
		return goals{P50: 1.5}
	}
	return goals{RPS: 0.80}
}

func envelopeLine(e api.Envelope) ([]byte, error) {
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the envelope: %w", err)
	}
	return append(b, '\n'), nil
}

// reorderedHello is a Client's Hello with its keys in the opposite order to api.Client's, as
// another program may write it: the same request, which the bus must decode.
func reorderedHello(tok api.Token) ([]byte, error) {
	token, err := json.Marshal(tok.Reveal()) // it goes on the wire only
	if err != nil {
		return nil, fmt.Errorf("encode the token: %w", err)
	}
	return []byte(`{"request":"Hello","from":"Client","token":` + string(token) + `,"api_version":1}` + "\n"), nil
}

// runBenchRequests starts the app from bin and, for each request, a baseline answering what the app
// answered it first, and measures both.
func runBenchRequests(ctx context.Context, bin, self string, env []string, o helloOptions, progress io.Writer) (*Report, error) {
	progress = lockedwriter.New(progress)
	return withApp(ctx, bin, env, progress, func(a *app, rep *Report) error {
		if err := api.CheckEndpoint(a.endpoint); err != nil {
			return fmt.Errorf("%s listens at %s: %w", appName, a.endpoint, err)
		}
		for _, r := range benchRequests {
			h, err := measureRequest(ctx, a, self, env, r, o, progress)
			if err != nil {
				return err
			}
			rep.Requests = append(rep.Requests, h)
			if ctx.Err() != nil {
				break
			}
		}
		return nil
	})
}

// measureRequest measures one request against a baseline that answers what the app answered it
// first.
func measureRequest(ctx context.Context, a *app, self string, env []string, r benchRequest, o helloOptions, progress io.Writer) (*HelloReport, error) {
	line, err := r.line(a.token)
	if err != nil {
		return nil, err
	}
	appT := &target{name: appName, addr: a.endpoint, line: line, want: r.want, pid: a.proc.pid()}
	_, answer, err := newClient(o.reqTimeout).request(ctx, appT)
	if err != nil {
		return nil, fmt.Errorf("the first %s to %s: %w", r.label, appName, err)
	}
	b, err := startBaseline(ctx, self, env, append(answer, '\n'), progress)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	baseT := &target{name: "baseline", addr: b.addr, line: line, want: r.want, pid: b.proc.pid()}
	fmt.Fprintf(progress, "%s:\n", r.label)
	h := measureHello(ctx, appT, baseT, o, requestGoals, progress)
	h.Request = r.label
	return h, nil
}
