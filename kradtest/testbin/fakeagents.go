package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// FakeAgents builds kradtest/fakeagent once per test process, as programs named claude, codex
// and gemini in a folder of their own, and returns the folder: the agents' CLIs as their hooks
// see them, whose hooks a test's app installs. It is removed by Cleanup.
func FakeAgents(t testing.TB) string {
	t.Helper()
	return fakeAgents.get(t, "the fake agents", "krad-agents-", func(dir string) error {
		if err := goBuild(nil, "-o", filepath.Join(dir, "claude"), "./kradtest/fakeagent"); err != nil {
			return err
		}
		for _, name := range []string{"codex", "gemini"} {
			if err := os.Link(filepath.Join(dir, "claude"), filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		return nil
	})
}
