//go:build e2e

package scenarios_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestExtensionFromAContainerHost: the lead's terminal on a container host calls a tool of an
// extension lent to its environment, the SDK's everything server, which the app runs on this
// machine with a credential in its environment: the host gets the tool's answer and never the
// credential (no process there holds it). An extension lent to main only is forbidden to the
// host.
func TestExtensionFromAContainerHost(t *testing.T) {
	t.Parallel()
	everything := testbin.Everything(t)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	credential := "cred-" + hex.EncodeToString(b)
	s := oneHost(t, 49, singleOptions{config: fmt.Sprintf(`[[extension]]
name = "everything"
command = [%q]
env = { TRACKER_TOKEN = %q }
environments = ["a"]

[[extension]]
name = "mainonly"
command = [%q]
`, everything, credential, everything)})
	lead := s.lead
	lead.waitForShell(t, 30*time.Second)

	start := time.Now()
	out := lead.mustRun(t, "krad tool everything greet --arg name='the container'")
	measured(t, "first krad tool call from the host (starts the server here): %s", ms(time.Since(start)))
	if out != "Hi the container" {
		t.Errorf("krad tool everything greet printed %q, want %q", out, "Hi the container")
	}
	if out = lead.mustRun(t, "krad tool everything"); !strings.Contains(out, "greet                              say hi") {
		t.Errorf("krad tool everything printed:\n%s", out)
	}
	out, rc := lead.run(t, "krad tool mainonly 2>&1", time.Minute)
	if rc != 3 || !strings.Contains(out, "forbidden: extension mainonly is not lent to environment a") {
		t.Errorf("krad tool mainonly from the host: exit %d, printed:\n%s\nwant exit 3, forbidden", rc, out)
	}
	scanProcesses(t, s.a, credential)
	s.app.logHas(time.Second, "extension started", "extension=everything")
	if log := s.app.Log.String(); strings.Contains(log, credential) || strings.Contains(log, "Hi the container") {
		t.Error("the app's log holds the extension's credential or a result")
	}
}
