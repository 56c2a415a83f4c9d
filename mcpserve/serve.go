package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/cmd/krad/cli"
)

// Serve is krad mcp's server as package cli runs it ([cli.Options.MCP]): the server of cfg,
// with the tools of the extensions lent to the caller, on stdin and stdout until the client
// leaves. krad gives it to the CLI, and so does the app, for the krad mcp it runs for a host's;
// the static krad, which must not link the SDK, does not.
func Serve(ctx context.Context, cfg cli.MCPConfig, stdin io.Reader, stdout io.Writer) error {
	// The person's MCP servers lent to this environment, as tools of its own.
	srv, err := New(ctx, Config{MCPConfig: cfg, Extensions: busExtensions{cfg.Call}})
	if err != nil {
		return err
	}
	return srv.Run(ctx, io.NopCloser(stdin), nopWriteCloser{stdout})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// busExtensions is the [Extensions] of the bus: the extensions lent to the caller's environment,
// listed and called through ExtensionTool, so that an agent on a host sees their tools as its own
// while they run on the computer of krad-ade.
type busExtensions struct {
	call func(ctx context.Context, req api.Request) (api.Answer, error)
}

var _ Extensions = busExtensions{}

// extensionTool makes one ExtensionTool request and reads its answer.
func (e busExtensions) extensionTool(ctx context.Context, body *api.ExtensionToolBody) (api.ExtensionAnswer, error) {
	var ans api.ExtensionAnswer
	a, err := e.call(ctx, api.NewRequest(api.ExtensionTool, body))
	if err != nil {
		return ans, err
	}
	return ans, a.Decode(api.AnswerExtension, &ans)
}

// Tools lists the tools of every extension lent to the caller. An extension that cannot list
// them (it does not start, say) is left out, so that it costs the others nothing; only a bus that
// cannot say which extensions there are is an error.
func (e busExtensions) Tools(ctx context.Context) ([]ExtensionTool, error) {
	lent, err := e.extensionTool(ctx, &api.ExtensionToolBody{})
	if err != nil {
		return nil, err
	}
	if lent.Extensions == nil {
		return nil, nil
	}
	var out []ExtensionTool
	for _, name := range *lent.Extensions {
		ans, err := e.extensionTool(ctx, &api.ExtensionToolBody{Extension: name})
		if err != nil {
			continue
		}
		for _, t := range ans.Tools {
			tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
			if tool.Description == "" { // a model picks tools by their descriptions
				tool.Description = fmt.Sprintf("Tool %s of the person's MCP server %s, which runs on the computer of krad-ade.", t.Name, name)
			}
			if len(t.InputSchema) > 0 {
				tool.InputSchema = t.InputSchema
			}
			if len(t.OutputSchema) > 0 {
				tool.OutputSchema = t.OutputSchema
			}
			out = append(out, ExtensionTool{Extension: name, Tool: tool})
		}
	}
	return out, nil
}

// Call calls one tool through the bus, and gives its result back in MCP's form.
func (e busExtensions) Call(ctx context.Context, extension, tool string, arguments json.RawMessage) (*mcp.CallToolResult, error) {
	body := &api.ExtensionToolBody{Extension: extension, Tool: tool}
	if len(arguments) > 0 && string(arguments) != "null" {
		body.Arguments = arguments
	}
	ans, err := e.extensionTool(ctx, body)
	if err != nil {
		return nil, err
	}
	if ans.Result == nil {
		return nil, errors.New("ExtensionTool: the app answered no result")
	}
	wire, err := json.Marshal(struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
	}{ans.Result.Content, ans.Result.StructuredContent, ans.Result.IsError})
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(wire, &res); err != nil {
		return nil, fmt.Errorf("ExtensionTool: the result of %s cannot be read as MCP's: %w", tool, err)
	}
	if ans.Truncated {
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("[krad: the result was longer than %d MiB and was cut]", api.MaxExtensionAnswer>>20)})
	}
	return &res, nil
}
