package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// How krad shows agents to people. Everything in an agent came from the app and is escaped with
// printable; a title is the user's or an agent's free text.

// agentID is an agent's terminal, "main:2".
func agentID(a api.Agent) string {
	return termsafe.Escape(a.Environment, api.MaxEnvironmentName) + ":" + strconv.Itoa(a.Terminal)
}

// agentState is an agent's state, with the exit code of one whose process ended: "failed (1)".
func agentState(a api.Agent) string {
	s := termsafe.Escape(string(a.State), 40)
	if a.ExitCode != nil && (a.State == api.StateDone || a.State == api.StateFailed) {
		s += " (" + strconv.Itoa(*a.ExitCode) + ")"
	}
	return s
}

// agentTitle is a title in single quotes, a quote inside it escaped: 'fix flaky test'.
func agentTitle(a api.Agent) string {
	return "'" + strings.ReplaceAll(termsafe.Escape(a.Title, api.MaxTitle), "'", `\'`) + "'"
}

// agentLine is one agent on one line: "main:2 worker 'fix flaky test' idle", and what the agent
// said with its state after it: "… needs_input: Claude needs your permission to use Bash".
func agentLine(a api.Agent) string {
	line := agentID(a) + " " + termsafe.Escape(string(a.Role), 40) + " " + agentTitle(a) + " " + agentState(a)
	if a.Message != "" {
		line += ": " + termsafe.Escape(a.Message, api.MaxReportMessage)
	}
	return line
}

// writeAgentTable writes agents as a table with a header, columns two spaces apart: where each
// state came from (FROM: reported, or screen), and the agent's message after its title.
func writeAgentTable(w io.Writer, agents []api.Agent) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TERMINAL\tROLE\tSTATE\tFROM\tTITLE")
	for _, a := range agents {
		title := termsafe.Escape(a.Title, api.MaxTitle)
		if a.Message != "" {
			title += " · " + termsafe.Escape(a.Message, api.MaxReportMessage)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", agentID(a), termsafe.Escape(string(a.Role), 40), agentState(a), termsafe.Escape(a.StateFrom, 40), title)
	}
	_ = tw.Flush()
	// An empty title leaves its row padded to the title column: trim each line.
	var out strings.Builder
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			out.WriteString(strings.TrimRight(line, " \n") + "\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// eventLine is one message of SubscribeAgents after the snapshot, for people: a changed agent as
// agentLine, an added or removed one with its kind after the terminal, an app event as
// "environment main down: <message>". ok is false for a message krad does not know, which a
// newer app may send.
func eventLine(a api.Answer) (line string, ok bool) {
	switch a.Name {
	case api.AnswerAgentEvent:
		var e api.AgentEvent
		if json.Unmarshal(a.Body, &e) != nil {
			return "", false
		}
		if e.Kind == api.AgentChanged {
			return agentLine(e.Agent), true
		}
		return agentID(e.Agent) + " " + termsafe.Escape(e.Kind, 40) + " " + strings.TrimPrefix(agentLine(e.Agent), agentID(e.Agent)+" "), true
	case api.AnswerAppEvent:
		var e api.AppEvent
		if json.Unmarshal(a.Body, &e) != nil {
			return "", false
		}
		kind := termsafe.Escape(e.Kind, 40)
		switch e.Kind {
		case api.EnvironmentUp:
			kind = "up"
		case api.EnvironmentDown:
			kind = "down"
		case api.EnvironmentAdded:
			kind = "added"
		case api.EnvironmentRemoved:
			kind = "removed"
		}
		line = "environment " + termsafe.Escape(e.Environment, api.MaxEnvironmentName) + " " + kind
		if e.Message != "" {
			line += ": " + termsafe.Escape(e.Message, maxLine)
		}
		return line, true
	}
	return "", false
}

// writeLine writes s and a newline in one write, so that a reader of a pipe (a status bar) gets
// whole lines as they come.
func writeLine(w io.Writer, s string) error {
	_, err := io.WriteString(w, s+"\n")
	return err
}

// printAnswer makes req and prints its answer on stdout: with --json the app's JSON as it sent
// it (writeRaw), else what text writes of it. It returns the answer, for a command that acts on
// it once it is printed.
func printAnswer[T any](x *invocation, b *bus, req api.Request, text func(T) error) (T, error) {
	var v T
	raw, err := b.answer(x.ctx, req, &v)
	if err != nil {
		return v, err
	}
	if x.json {
		return v, writeRaw(x.stdout, raw)
	}
	return v, text(v)
}

// writeRaw writes a JSON value from the app as one line, as the app sent it but compacted.
func writeRaw(w io.Writer, raw json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return fmt.Errorf("the app's answer is not valid JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// exitText says how an ended agent exited, for an error line: "exit code 1".
func exitText(a api.Agent) string {
	if a.ExitCode == nil {
		return "no exit code"
	}
	return fmt.Sprintf("exit code %d", *a.ExitCode)
}
