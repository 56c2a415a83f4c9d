package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExtensionTool lends the person's own MCP servers ([[extension]] in the app's config.toml) to
// agents: the app runs the server on its own computer, with the person's environment and
// credentials, and only the request's arguments and the tool's result cross the bus.

// ExtensionToolBody: with Extension empty, the names of the extensions lent to the caller's
// environment; with Tool empty, the tool list of extension Extension; with Tool, the result of
// calling that tool (MCP tools/call) with Arguments, a JSON object (none: {}).
type ExtensionToolBody struct {
	Extension string          `json:"extension,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Limits of ExtensionToolBody.
const (
	// MaxExtensionName is the longest extension name: 1 to 40 of a-z, 0-9, - and _.
	MaxExtensionName = 40
	// MaxToolName is the longest tool name, in bytes (MCP allows 128 characters).
	MaxToolName = 128
)

// MaxExtensionAnswer caps the body of an Extension answer, as JSON: a longer tool result keeps
// the content that fits, its last text cut, and says Truncated; a longer tool list keeps the
// tools that fit. A message of more than 16 MiB from the extension (the MCP SDK's limit) is not
// read at all: the call answers unavailable. 4 MiB is an eighth of MaxAnswerLine.
const MaxExtensionAnswer = 4 << 20

// ExtensionAnswer is the answer to ExtensionTool, {"Extension":{…}}: Extensions when the request
// named no extension, Tools when it named no tool, Result when it did.
type ExtensionAnswer struct {
	Extension string `json:"extension,omitempty"`
	// Extensions are the names of the extensions lent to the caller's environment, set (maybe
	// empty) when the request named no extension.
	Extensions *[]string  `json:"extensions,omitempty"`
	Tools      []ToolInfo `json:"tools,omitempty"`
	// Result is set when the request named a tool.
	Result *ToolResult `json:"result,omitempty"`
	// Truncated: the tool list or result was longer than MaxExtensionAnswer and was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// ToolInfo is one tool of an extension, as its MCP server describes it. The schemas are JSON
// Schema objects, as the server sent them.
type ToolInfo struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ToolResult is what a tools/call answered. Content holds MCP content blocks in MCP's own wire
// form ({"type":"text","text":"…"}, {"type":"image","data":"…","mimeType":"…"}, …), so that a
// program that speaks MCP can pass them on unchanged. IsError is the tool's own report that it
// failed (the bus answer is still a success: the call was made). A program that speaks MCP gets
// the SDK's result back by decoding {"content":Content,"structuredContent":StructuredContent,
// "isError":IsError} into an mcp.CallToolResult.
type ToolResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structured_content,omitempty"`
	IsError           bool              `json:"is_error,omitempty"`
}

// ValidExtensionName checks an extension's name: 1 to 40 of a-z, 0-9, - and _.
func ValidExtensionName(s string) error {
	if s == "" || len(s) > MaxExtensionName {
		return fmt.Errorf("extension must be 1 to %d of a-z, 0-9, - and _", MaxExtensionName)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("extension must be 1 to %d of a-z, 0-9, - and _", MaxExtensionName)
		}
	}
	return nil
}

func validateExtensionTool(b *ExtensionToolBody) error {
	if b.Extension == "" && b.Tool == "" && len(b.Arguments) == 0 {
		return nil // the extensions lent to the caller
	}
	if err := ValidExtensionName(b.Extension); err != nil {
		return err
	}
	if b.Tool == "" {
		if len(b.Arguments) > 0 {
			return errors.New("arguments need a tool")
		}
		return nil
	}
	if len(b.Tool) > MaxToolName || !utf8.ValidString(b.Tool) || strings.ContainsFunc(b.Tool, unicode.IsControl) {
		return fmt.Errorf("tool must be at most %d bytes of UTF-8 with no control characters", MaxToolName)
	}
	if len(b.Arguments) > 0 {
		if a := bytes.TrimSpace(b.Arguments); len(a) == 0 || a[0] != '{' {
			return errors.New("arguments must be a JSON object")
		}
	}
	return nil
}
