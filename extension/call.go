package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// tools answers ExtensionTool without a tool: the extension's tool list. A session that dies
// under the list, one that was running before this request, is started again once: listing
// changes nothing.
func (x *ext) tools(ctx context.Context) (api.ExtensionAnswer, error) {
	for try := 0; ; try++ {
		s, fresh, err := x.acquire(ctx)
		if err != nil {
			return api.ExtensionAnswer{}, err
		}
		list, err := s.list(ctx)
		s.release()
		if err == nil {
			return toolsAnswer(x.spec.Name, list), nil
		}
		if ctx.Err() != nil {
			return api.ExtensionAnswer{}, ctx.Err()
		}
		// A session that ran before this request may have died since: start it once more.
		if e := x.failed(s, err); fresh || try > 0 {
			return api.ExtensionAnswer{}, e
		}
	}
}

// call answers ExtensionTool with a tool: the result of tools/call. The call is sent once at
// most: a tool that may have acted is not called again. A session that was running before this
// request and turns out dead before the request reached it (its list failed, or the write of the
// call met a closed pipe: the process had ended and the session did not know yet) is started
// again once, as tools does.
func (x *ext) call(ctx context.Context, tool string, args json.RawMessage) (api.ExtensionAnswer, error) {
	for try := 0; ; try++ {
		s, fresh, err := x.acquire(ctx)
		if err != nil {
			return api.ExtensionAnswer{}, err
		}
		ans, notSent, err := x.callOn(ctx, s, tool, args)
		s.release()
		if err == nil || !notSent || fresh || try > 0 || ctx.Err() != nil {
			return ans, err
		}
	}
}

// callOn is call on session s. notSent says that the call did not reach the extension (so that it
// can be made again): its session had died before it was written.
func (x *ext) callOn(ctx context.Context, s *session, tool string, args json.RawMessage) (ans api.ExtensionAnswer, notSent bool, err error) {
	// The tool must be on the list: a clear not_found, rather than whatever the server says.
	if !s.has(tool) {
		list, err := s.list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return api.ExtensionAnswer{}, false, ctx.Err()
			}
			return api.ExtensionAnswer{}, true, x.failed(s, err)
		}
		if !s.has(tool) {
			names := make([]string, 0, len(list))
			for _, t := range list {
				names = append(names, termsafe.Escape(t.Name, 60))
			}
			return api.ExtensionAnswer{}, false, api.Errorf(api.CodeNotFound, "extension %s has no tool %s; its tools: %s",
				x.spec.Name, termsafe.QuoteMax(tool, 60), termsafe.Shorten(strings.Join(names, ", "), 2000))
		}
	}
	params := &mcp.CallToolParams{Name: tool}
	if len(args) > 0 {
		params.Arguments = args
	} else {
		params.Arguments = json.RawMessage(`{}`)
	}
	res, err := s.cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return api.ExtensionAnswer{}, false, ctx.Err()
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && !isGone(s) {
			return api.ExtensionAnswer{}, false, x.refused(tool, we)
		}
		return api.ExtensionAnswer{}, unsent(err), x.failed(s, err)
	}
	return resultAnswer(x.spec.Name, res), false, nil
}

// unsent says that a call's error means the call never reached the extension: its write met a
// closed pipe (a write cut short sends no whole line, and a line is a message), or the SDK would
// not write it on a connection that was closing already (jsonrpc2's ErrClientClosing, which the
// SDK passes on only as text inside mcp.ErrConnectionClosed). Any other end is ambiguous: the
// extension may have read the call and acted.
func unsent(err error) bool {
	return errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing")
}

// list fetches the tool list and keeps it for has.
func (s *session) list(ctx context.Context) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(list) < maxTools {
			list = append(list, t)
		}
	}
	s.mu.Lock()
	s.tools = list
	s.mu.Unlock()
	return list, nil
}

// has reports whether the last tool list has tool.
func (s *session) has(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// isGone reports whether the session's connection has ended.
func isGone(s *session) bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// failed is the error of a session that broke under a request: it is stopped, so that the next
// request starts the extension again.
func (x *ext) failed(s *session, err error) *api.Error {
	s.drop()
	<-s.done
	return x.unavailable(fmt.Sprintf("failed: %v", describe(err)), s.stderr.String())
}

// refused is the error of a tools/call the extension answered with a JSON-RPC error.
func (x *ext) refused(tool string, we *jsonrpc.Error) *api.Error {
	msg := termsafe.Escape(we.Message, 500)
	if we.Code == jsonrpc.CodeInvalidParams {
		return api.Errorf(api.CodeBadRequest, "extension %s refused the arguments of tool %s: %s", x.spec.Name, termsafe.QuoteMax(tool, 60), msg)
	}
	return api.Errorf(api.CodeUnavailable, "extension %s answered tool %s with error %d: %s", x.spec.Name, termsafe.QuoteMax(tool, 60), we.Code, msg)
}

// describe is an error of the SDK as a person reads it: its own words, escaped and cut, with the
// one that means "too large" said plainly.
func describe(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "exceeded the configured maximum line length") {
		return errors.New("it sent a message larger than 16 MiB, which the app does not read; it was stopped")
	}
	if errors.Is(err, mcp.ErrConnectionClosed) || strings.Contains(msg, "EOF") {
		return fmt.Errorf("it closed its stdout or exited (%s)", termsafe.Escape(msg, 300))
	}
	return errors.New(termsafe.Escape(msg, 300))
}

// lastLine keeps the end of what an extension writes to stderr, for an error: its last line.
type lastLine struct{ b *capped.Buffer }

func newLastLine() *lastLine { return &lastLine{b: capped.Last(4096)} }

func (l *lastLine) Write(p []byte) (int, error) { return l.b.Write(p) }

// String is the last line that is not blank, escaped and cut, or "".
func (l *lastLine) String() string {
	lines := strings.Split(strings.TrimRight(l.b.String(), "\r\n\t "), "\n")
	return termsafe.Escape(strings.TrimRight(lines[len(lines)-1], "\r"), 300)
}

// budget is what the answer's tools or result may take, MaxExtensionAnswer less room for the
// rest of the answer.
const budget = api.MaxExtensionAnswer - 1024

// size is how long v is on the wire, once the bus has encoded it (which escapes <, > and & in
// raw JSON too).
func size(raw []byte) int {
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return len(raw)
	}
	return len(b)
}

// toolsAnswer is the answer of a tool list, the tools that fit.
func toolsAnswer(name string, list []*mcp.Tool) api.ExtensionAnswer {
	ans := api.ExtensionAnswer{Extension: name, Tools: []api.ToolInfo{}}
	used := 0
	for _, t := range list {
		info := api.ToolInfo{Name: t.Name, Title: t.Title, Description: t.Description}
		if t.InputSchema != nil {
			info.InputSchema, _ = json.Marshal(t.InputSchema)
		}
		if t.OutputSchema != nil {
			info.OutputSchema, _ = json.Marshal(t.OutputSchema)
		}
		b, err := json.Marshal(info)
		if err != nil {
			continue
		}
		if n := size(b); used+n+1 > budget {
			ans.Truncated = true
			break
		} else {
			used += n + 1
		}
		ans.Tools = append(ans.Tools, info)
	}
	return ans
}

// resultAnswer is the answer of a tools/call: its content while it fits, the text of the first
// that does not cut to fit, its structured content if it still fits.
func resultAnswer(name string, res *mcp.CallToolResult) api.ExtensionAnswer {
	r := &api.ToolResult{Content: []json.RawMessage{}, IsError: res.IsError}
	ans := api.ExtensionAnswer{Extension: name, Result: r}
	used := 0
	for _, c := range res.Content {
		b, err := json.Marshal(c)
		if err != nil {
			continue
		}
		n := size(b)
		if used+n+1 <= budget {
			r.Content = append(r.Content, b)
			used += n + 1
			continue
		}
		ans.Truncated = true
		if t, ok := c.(*mcp.TextContent); ok {
			if b := cutText(t.Text, budget-used-1); b != nil {
				r.Content = append(r.Content, b)
				used += size(b) + 1
			}
		}
		break
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			if n := size(b); used+n <= budget {
				r.StructuredContent = b
			} else {
				ans.Truncated = true
			}
		}
	}
	return ans
}

// cutText is a text content of text's start, as long as fits in room bytes on the wire, or nil.
func cutText(text string, room int) []byte {
	n := min(len(text), room)
	for n > 0 {
		for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		b, err := json.Marshal(&mcp.TextContent{Text: text[:n]})
		if err != nil {
			return nil
		}
		sz := size(b)
		if sz <= room {
			return b
		}
		// Escapes take up to 6 bytes a byte: shrink in proportion, and a little more.
		n = min(n-1, int(int64(n)*int64(room)/int64(sz))-16)
	}
	return nil
}
