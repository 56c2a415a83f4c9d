package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// toolCommand is `krad tool EXT [TOOL]`: ExtensionTool.
func toolCommand() *command {
	var pairs []string
	var argsJSON string
	var raw bool
	return &command{
		name:    "tool",
		args:    "[EXT [TOOL [--arg K=V ...] [--json ARGS]]] [--raw]",
		summary: "list or call the tools of an extension (an MCP server config.toml names)",
		help: `
Lists the extensions lent to this terminal's environment, or with EXT the tools of extension EXT,
or with TOOL calls that tool and prints what the tool answered. An
extension is an MCP server named by an [[extension]] table in config.toml on the computer that
runs krad-ade: the app runs it there, with that computer's environment and credentials, and only
the arguments and the result travel, also from an SSH host's terminal.

The arguments are one JSON object: --json '{"title":"flaky test","labels":["ci"]}', or built
from --arg pairs: --arg title='flaky test' sets a string, --arg count:=3 (with :=) a JSON value,
a number, true, or a list. Give one or the other.

A call prints the text the tool answered, other content as one line that says what it is, and
its structured content as JSON when it gave nothing else. A tool that reports an error prints
its text too, and krad exits 1.`,
		footer: `
--json here takes the tool's arguments; --raw prints the app's answer as one line of JSON
({"extensions"}, {"extension","tools"} or {"extension","result"}).`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&pairs, "arg", nil, "one argument: `K=V` (a string) or K:=JSON (repeatable)")
			fs.StringVar(&argsJSON, "json", "", "the arguments as one JSON object, `ARGS`")
			fs.BoolVar(&raw, "raw", false, `print the answer as one line of JSON`)
		},
		run: func(x *invocation, args []string) error {
			if len(args) > 2 {
				return x.usageError("%s takes an extension's name and, to call one, a tool's", x.path)
			}
			body := &api.ExtensionToolBody{}
			if len(args) > 0 {
				body.Extension = args[0]
				if err := api.ValidExtensionName(args[0]); err != nil {
					return x.usageError("%v, not %s", err, quote(args[0]))
				}
			}
			if len(args) < 2 && (len(pairs) > 0 || argsJSON != "") {
				return x.usageError("arguments need a tool: %s EXT TOOL --arg K=V", x.path)
			}
			if len(args) == 2 {
				body.Tool = args[1]
				a, err := toolArguments(pairs, argsJSON)
				if err != nil {
					return x.usageError("%v", err)
				}
				body.Arguments = a
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			var ans api.ExtensionAnswer
			rawAns, err := b.answer(x.ctx, api.NewRequest(api.ExtensionTool, body), &ans)
			if err != nil {
				return err
			}
			if raw {
				return writeRaw(x.stdout, rawAns)
			}
			if ans.Truncated {
				x.warn("the answer was longer than %d MiB and was cut", api.MaxExtensionAnswer>>20)
			}
			if body.Extension == "" {
				if ans.Extensions == nil || len(*ans.Extensions) == 0 {
					return writeLine(x.stdout, "no extension is lent to this environment ([[extension]] in krad-ade's config.toml)")
				}
				for _, name := range *ans.Extensions {
					if err := writeLine(x.stdout, termsafe.Escape(name, api.MaxExtensionName)); err != nil {
						return err
					}
				}
				return nil
			}
			if body.Tool == "" {
				return writeTools(x.stdout, ans.Tools)
			}
			if ans.Result == nil {
				return b.unexpected(api.NewRequest(api.ExtensionTool, body), fmt.Errorf("the app answered no result"))
			}
			if err := writeResult(x.stdout, ans.Result); err != nil {
				return err
			}
			if ans.Result.IsError {
				return &problem{err: fmt.Errorf("tool %s of extension %s reported an error", quote(body.Tool), body.Extension),
					hint: "what it printed says why; krad tool " + body.Extension + " shows what its tools take"}
			}
			return nil
		},
	}
}

// toolArguments makes a tool's arguments, one JSON object, from --arg pairs (K=V a string, K:=V
// a JSON value) or from --json's object; it refuses both at once, a key given twice, an empty
// key, and JSON that is not one object (or, after :=, one value).
func toolArguments(pairs []string, argsJSON string) (json.RawMessage, error) {
	for _, p := range append([]string{argsJSON}, pairs...) {
		if !utf8.ValidString(p) {
			return nil, fmt.Errorf("the arguments must be text (UTF-8), and %s is not", quote(p))
		}
	}
	if argsJSON != "" {
		if len(pairs) > 0 {
			return nil, fmt.Errorf("give the arguments with --arg or with --json, not both")
		}
		var obj map[string]json.RawMessage
		if err := oneValue([]byte(argsJSON), &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("--json must be one JSON object, like '{\"title\":\"x\"}'")
		}
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(argsJSON)); err != nil {
			return nil, fmt.Errorf("--json must be one JSON object, like '{\"title\":\"x\"}'")
		}
		return b.Bytes(), nil
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	obj := make(map[string]json.RawMessage, len(pairs))
	keys := make([]string, 0, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--arg %s: give K=V, or K:=JSON", quote(p))
		}
		literal := strings.HasSuffix(k, ":")
		k = strings.TrimSuffix(k, ":")
		if k == "" {
			return nil, fmt.Errorf("--arg %s: the name before = is empty", quote(p))
		}
		if _, dup := obj[k]; dup {
			return nil, fmt.Errorf("--arg: %s is given twice", quote(k))
		}
		var val json.RawMessage
		if literal {
			var value json.RawMessage
			if err := oneValue([]byte(v), &value); err != nil {
				return nil, fmt.Errorf("--arg %s: after := comes one JSON value (3, true, \"text\", [1,2]); for text use =", quote(k))
			}
			var b bytes.Buffer
			_ = json.Compact(&b, value)
			val = b.Bytes()
		} else {
			s, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("--arg %s: %w", quote(k), err)
			}
			val = s
		}
		obj[k] = val
		keys = append(keys, k)
	}
	// In the order given: json.Marshal of a map would sort the keys.
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		b.Write(name)
		b.WriteByte(':')
		b.Write(obj[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// oneValue decodes data, which must hold one JSON value and nothing after it.
func oneValue(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("more than one value")
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("more than one value")
	}
	return nil
}

// writeTools writes an extension's tools as a table: each one's name and the first line of its
// description.
func writeTools(w io.Writer, tools []api.ToolInfo) error {
	if len(tools) == 0 {
		return writeLine(w, "the extension has no tools")
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
	for _, t := range tools {
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		if desc == "" {
			desc = t.Title
		}
		fmt.Fprintf(tw, "%s\t%s\n", termsafe.Escape(t.Name, api.MaxToolName), termsafe.Escape(desc, 120))
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

// writeResult writes what a tool answered: its text as it is (control characters escaped, lines
// and tabs kept), other content as one line that says what it is, and its structured content,
// indented, when it gave no content.
func writeResult(w io.Writer, r *api.ToolResult) error {
	var b strings.Builder
	for _, c := range r.Content {
		var block struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			Resource *struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"resource"`
		}
		if json.Unmarshal(c, &block) != nil {
			continue
		}
		switch block.Type {
		case "text":
			b.WriteString(textOf(block.Text))
		case "resource":
			if block.Resource != nil && block.Resource.Text != "" {
				b.WriteString(textOf(block.Resource.Text))
			} else if block.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]\n", termsafe.Escape(block.Resource.URI, 300))
			}
		case "resource_link":
			fmt.Fprintf(&b, "[link %s %s]\n", termsafe.Escape(block.Name, 100), termsafe.Escape(block.URI, 300))
		default:
			fmt.Fprintf(&b, "[%s %s, %d bytes base64]\n", termsafe.Escape(block.Type, 20), termsafe.Escape(block.MIMEType, 60), len(block.Data))
		}
	}
	if len(r.Content) == 0 && len(r.StructuredContent) > 0 {
		var out bytes.Buffer
		if json.Indent(&out, r.StructuredContent, "", "  ") == nil {
			b.WriteString(textOf(out.String()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// textOf is a tool's text for a terminal: each line escaped, tabs kept, ending in a newline.
func textOf(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		parts := strings.Split(strings.TrimSuffix(l, "\r"), "\t")
		for j, p := range parts {
			parts[j] = termsafe.Escape(p, len(p)*4+4)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n") + "\n"
}
