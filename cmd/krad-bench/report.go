package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Report is what a run measured, printed as Markdown or JSON. It holds no token.
type Report struct {
	Machine  Machine      `json:"machine"`
	AppBuild string       `json:"app_build,omitempty"`
	Hello    *HelloReport `json:"hello,omitempty"`
	// Requests are the round trips of `krad-bench requests`, one report per request.
	Requests []*HelloReport `json:"requests,omitempty"`
	Process  *ProcessReport `json:"process,omitempty"`
	// Notes are odd things seen during the run, such as an app that left api.json behind.
	Notes []string `json:"notes,omitempty"`
}

// Machine describes the computer the figures come from.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	OS         string `json:"os"`
	Kernel     string `json:"kernel,omitempty"`
	Go         string `json:"go"`
}

// HelloReport is a round-trip benchmark of one request (Hello for `krad-bench hello`): one entry
// per mode.
type HelloReport struct {
	// Request names the request for `krad-bench requests`; "" is the canonical Client Hello.
	Request string      `json:"request,omitempty"`
	Rounds  int         `json:"rounds"`
	Warmup  int         `json:"warmup"`
	Modes   []HelloMode `json:"modes"`
}

// HelloMode compares the app with the baseline in one mode.
type HelloMode struct {
	Goals      goals   `json:"goals"`
	Mode       string  `json:"mode"`
	Clients    int     `json:"clients"`
	Requests   int     `json:"requests_per_round"`
	App        Stats   `json:"app"`
	Baseline   Stats   `json:"baseline"`
	RPSRatio   float64 `json:"rps_ratio"`
	P50Ratio   float64 `json:"p50_ratio"`
	P99Ratio   float64 `json:"p99_ratio"`
	RPSGoalMet bool    `json:"rps_goal_met"` // each is true when the mode has no such goal
	P50GoalMet bool    `json:"p50_goal_met"`
	P99GoalMet bool    `json:"p99_goal_met"`
}

// ProcessReport compares `krad api` with printf | nc.
type ProcessReport struct {
	Runs      int     `json:"runs"`
	Warmup    int     `json:"warmup"`
	Krad      Stats   `json:"krad_api"`
	Nc        Stats   `json:"printf_nc"`
	MeanRatio float64 `json:"mean_ratio"`
	P50Ratio  float64 `json:"p50_ratio"`
	GoalMet   bool    `json:"goal_met"`
}

// Stats are the figures of one server or tool. Durations are in nanoseconds in JSON.
type Stats struct {
	Server    string        `json:"server"`
	Requests  int           `json:"requests"` // measured successes
	Failed    int           `json:"failed"`   // warm-up included
	Failures  Failures      `json:"failures"`
	RPS       float64       `json:"rps,omitempty"`        // of the median round
	PooledRPS float64       `json:"rps_pooled,omitempty"` // all rounds' requests over their summed time
	RoundRPS  []float64     `json:"round_rps,omitempty"`
	Mean      time.Duration `json:"mean_ns"`
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	Max       time.Duration `json:"max_ns"`
	// ServerCPU is the CPU time, user and system, the server's process used per request during
	// the measured rounds, from /proc; 0 where it is not known.
	ServerCPU time.Duration `json:"server_cpu_per_request_ns,omitempty"`
}

// Failed is the number of failed requests and runs in the report.
func (r *Report) Failed() int {
	n := 0
	for _, h := range r.roundTrips() {
		for _, m := range h.Modes {
			n += m.App.Failed + m.Baseline.Failed
		}
	}
	if r.Process != nil {
		n += r.Process.Krad.Failed + r.Process.Nc.Failed
	}
	return n
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteMarkdown writes the report as Markdown tables, ready for BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	m := r.Machine
	p("Machine: %d CPUs (%s), GOMAXPROCS %d, %s", m.CPUs, orUnknown(m.CPU), m.GOMAXPROCS, m.OS)
	if m.Kernel != "" {
		p(", kernel %s", m.Kernel)
	}
	p(", %s", m.Go)
	if r.AppBuild != "" {
		p("; krad-ade build %s", r.AppBuild)
	}
	p(".\n")

	for _, h := range r.roundTrips() {
		h.writeMarkdown(p)
	}
	if pr := r.Process; pr != nil {
		p("\n### `krad api` against printf | nc, wall time per invocation\n\n")
		p("%d runs of each, alternating, after a warm-up of %d each; from the start of the process to its exit.\n\n", pr.Runs, pr.Warmup)
		p("| Tool | Runs | Failed | mean | p50 | p99 | max |\n")
		p("|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range []Stats{pr.Krad, pr.Nc} {
			p("| %s | %d | %d | %s | %s | %s | %s |\n", cell(s.Server), s.Requests, s.Failed, fmtDur(s.Mean), fmtDur(s.P50), fmtDur(s.P99), fmtDur(s.Max))
		}
		p("\n| p50, krad api ÷ nc | mean, krad api ÷ nc | Goal: krad api no slower (p50) |\n")
		p("|---:|---:|---|\n")
		p("| %.2f× | %.2f× | %s |\n", pr.P50Ratio, pr.MeanRatio, met(pr.GoalMet))
	}

	var fails []string
	for _, h := range r.roundTrips() {
		for _, md := range h.Modes {
			for _, s := range []Stats{md.App, md.Baseline} {
				if s.Failed > 0 {
					fails = append(fails, fmt.Sprintf("%s%s, %s: %s", h.label(", "), md.Mode, s.Server, s.Failures.String()))
				}
			}
		}
	}
	if r.Process != nil {
		for _, s := range []Stats{r.Process.Krad, r.Process.Nc} {
			if s.Failed > 0 {
				fails = append(fails, fmt.Sprintf("%s: %s", s.Server, s.Failures.String()))
			}
		}
	}
	if len(fails) > 0 {
		p("\nFailures:\n\n")
		for _, f := range fails {
			p("- %s\n", f)
		}
	}
	if len(r.Notes) > 0 {
		p("\nNotes:\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	return bw.Flush()
}

// roundTrips are the report's round-trip benchmarks: Hello's, then each request's.
func (r *Report) roundTrips() []*HelloReport {
	var hs []*HelloReport
	if r.Hello != nil {
		hs = append(hs, r.Hello)
	}
	return append(hs, r.Requests...)
}

// label is the request's name followed by sep, or "" for the canonical Hello.
func (h *HelloReport) label(sep string) string {
	if h.Request == "" {
		return ""
	}
	return h.Request + sep
}

// writeMarkdown writes one round-trip benchmark: its figures, then its ratios to the baseline
// beside its goals.
func (h *HelloReport) writeMarkdown(p func(string, ...any)) {
	what := "Hello"
	if h.Request != "" {
		what = "`" + h.Request + "`"
	}
	p("\n### %s round trips, one TCP connection each\n\n", what)
	p("%d rounds per server and mode, alternating with the baseline, after a warm-up of %d requests per server and mode. "+
		"Req/s is that of the median round; p50, p99 and max are over every request of every round; "+
		"server CPU is the user and system time of the server's process per request.\n\n", h.Rounds, h.Warmup)
	p("| Mode | Server | Requests | Failed | Req/s (median round) | Req/s by round | p50 | p99 | max | Server CPU per request |\n")
	p("|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, md := range h.Modes {
		for _, s := range []Stats{md.App, md.Baseline} {
			cpu := "–"
			if s.ServerCPU > 0 {
				cpu = fmtDur(s.ServerCPU)
			}
			p("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n",
				modeLabel(md.Mode, md.Clients), cell(s.Server), s.Requests, s.Failed, fmtRate(s.RPS), fmtRates(s.RoundRPS),
				fmtDur(s.P50), fmtDur(s.P99), fmtDur(s.Max), cpu)
		}
	}
	p("\n| Mode | Req/s, app ÷ baseline | Goal | p50, app ÷ baseline | Goal | p99, app ÷ baseline | Goal |\n")
	p("|---|---:|---|---:|---|---:|---|\n")
	for _, md := range h.Modes {
		g := md.Goals
		p("| %s | %.1f%% | %s | %.2f× | %s | %.2f× | %s |\n", modeLabel(md.Mode, md.Clients),
			md.RPSRatio*100, goalCell(g.RPS, "≥ %.0f%%", 100, md.RPSGoalMet),
			md.P50Ratio, goalCell(g.P50, "≤ %g×", 1, md.P50GoalMet),
			md.P99Ratio, goalCell(g.P99, "≤ %g×", 1, md.P99GoalMet))
	}
}

// goalCell is "≥ 80%: met", say, or "–" where the mode has no such goal (ratio 0).
func goalCell(ratio float64, format string, scale float64, ok bool) string {
	if ratio == 0 {
		return "–"
	}
	return fmt.Sprintf(format, ratio*scale) + ": " + met(ok)
}

func modeLabel(mode string, clients int) string {
	if clients == 1 {
		return mode + " (1 client)"
	}
	return fmt.Sprintf("%s (%d clients)", mode, clients)
}

// cell escapes the pipes of a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func orUnknown(s string) string {
	if s == "" {
		return "model unknown"
	}
	return s
}

func fmtRate(r float64) string { return fmt.Sprintf("%.0f", r) }

func fmtRates(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmtRate(r)
	}
	return strings.Join(parts, " / ")
}

// fmtDur prints a duration in µs below 1 ms, in ms above.
func fmtDur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// thisMachine describes this computer from the runtime and, on Linux, from /proc.
func thisMachine() Machine {
	m := Machine{
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		Go:         runtime.Version(),
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}
