package mcpserve_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkToolCall is one List through krad mcp, its server already started (mcp), against the
// same request through a krad process, as an agent runs `krad list --json` from its shell
// (process): both against the real app, in the same run.
func BenchmarkToolCall(b *testing.B) {
	h := start(b)
	b.Run("mcp", func(b *testing.B) {
		s, err := h.connect(h.env("main:1"))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for b.Loop() {
			res := s.call(b, ctx, "list_agents", nil, false)
			if res.IsError {
				b.Fatal(textOf(res))
			}
		}
	})
	b.Run("process", func(b *testing.B) {
		krad := filepath.Join(h.bin, "krad")
		env := h.env("main:1")
		for b.Loop() {
			cmd := exec.Command(krad, "list", "--json")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("krad list: %v\n%s", err, out)
			}
		}
	})
}
