package testbin

import (
	"path/filepath"
	"testing"
)

// EverythingPackage is the MCP server the tests use as a person's extension: the "everything"
// example server of the official Go SDK, a third-party program from the module proxy (the SDK's
// module, at the version go.mod requires), not one written for the tests. It speaks MCP over
// stdio and has tools with and without structured output: "greet" takes {"name": string}.
const EverythingPackage = "github.com/modelcontextprotocol/go-sdk/examples/server/everything"

// Everything builds the SDK's everything server once per test process and returns its path. It
// is removed by Cleanup.
func Everything(t testing.TB) string {
	t.Helper()
	dir := everything.get(t, "the MCP server", "krad-mcp-", func(dir string) error {
		return goBuild(nil, "-o", filepath.Join(dir, "everything"), EverythingPackage)
	})
	return filepath.Join(dir, "everything")
}
