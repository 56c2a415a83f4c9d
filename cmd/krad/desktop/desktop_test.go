package desktop_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// TestMCPWithoutTheApp: krad mcp runs krad-ade's MCP server; a krad copied alone, with no
// krad-ade beside it or on PATH, says so and what to do, and exits 1, before it reads its input.
func TestMCPWithoutTheApp(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testbin.Dir(t), "krad"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	krad := filepath.Join(dir, "krad")
	if err := os.WriteFile(krad, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(krad, "mcp")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, api.VarEndpoint + "=127.0.0.1:9", api.VarToken + "=" + tok.Reveal()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	want := "krad: error: krad mcp runs krad-ade's MCP server, and there is no krad-ade in " + termsafe.Quote(dir) + " or on PATH\n" +
		"krad: hint: install krad-ade and krad together (scripts/start builds both into one folder)\n"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("krad mcp alone: %v, stdout %q, stderr\n%s\nwant exit 1 and\n%s", err, stdout.String(), stderr.String(), want)
	}
}
