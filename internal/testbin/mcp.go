package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// EverythingPackage is the MCP server the tests use as a person's extension: the "everything"
// example server of the official Go SDK, a third-party program from the module proxy (the SDK's
// module, at the version go.mod requires), not one written for the tests. It speaks MCP over
// stdio and has tools with and without structured output: "greet" takes {"name": string}.
const EverythingPackage = "github.com/modelcontextprotocol/go-sdk/examples/server/everything"

var (
	mcpOnce sync.Once
	mcpDir  string
	mcpErr  error
)

// Everything builds the SDK's everything server once per test process and returns its path. It
// is removed by Cleanup.
func Everything(t testing.TB) string {
	t.Helper()
	mcpOnce.Do(func() {
		mcpDir, mcpErr = os.MkdirTemp("", "krad-mcp-")
		if mcpErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(mcpDir, "everything"), EverythingPackage)
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpErr = fmt.Errorf("go build %s: %w\n%s", EverythingPackage, err, out)
		}
	})
	if mcpErr != nil {
		t.Fatalf("build the MCP server: %v", mcpErr)
	}
	return filepath.Join(mcpDir, "everything")
}
