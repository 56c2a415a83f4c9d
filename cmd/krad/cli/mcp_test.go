package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestMCPPrintConfig: each snippet is what its CLI reads, and names krad mcp; another CLI is a
// usage error. Nothing needs a bus.
func TestMCPPrintConfig(t *testing.T) {
	type server struct {
		Command string   `json:"command" toml:"command"`
		Args    []string `json:"args" toml:"args"`
	}
	out, errOut, code := runAs(t, "krad", nil, nil, "mcp", "--print-config", "claude")
	if code != 0 || out != "claude mcp add krad -- krad mcp\n" || errOut != "" {
		t.Errorf("claude: %q %q %d", out, errOut, code)
	}

	out, _, code = runAs(t, "krad", nil, nil, "mcp", "--print-config", "codex")
	var codex struct {
		MCPServers map[string]server `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(out, &codex); err != nil || code != 0 {
		t.Fatalf("codex: %q is not TOML: %v", out, err)
	}
	if s := codex.MCPServers["krad"]; s.Command != "krad" || strings.Join(s.Args, " ") != "mcp" {
		t.Errorf("codex: %+v", codex)
	}

	out, _, code = runAs(t, "krad", nil, nil, "mcp", "--print-config", "gemini")
	var gemini struct {
		MCPServers map[string]server `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(out), &gemini); err != nil || code != 0 {
		t.Fatalf("gemini: %q is not JSON: %v", out, err)
	}
	if s := gemini.MCPServers["krad"]; s.Command != "krad" || strings.Join(s.Args, " ") != "mcp" {
		t.Errorf("gemini: %+v", gemini)
	}

	out, errOut, code = runAs(t, "krad", nil, nil, "mcp", "--print-config", "vim")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "krad: error: --print-config takes claude, codex or gemini, not \"vim\"") {
		t.Errorf("vim: %q %q %d", out, errOut, code)
	}
}
