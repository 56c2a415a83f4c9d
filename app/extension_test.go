package app_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestExtensionFromATerminal is the example typed in a terminal of this computer: krad
// tool lists the tools of the SDK's everything server (a real MCP server from the module proxy),
// calls one with --arg and one with --json, and meets the faults a person can: a tool the server
// lacks, arguments its schema refuses, an extension not lent to this environment, one that exits
// at once and one that never answers (the deadline is 3 s here). What each printed is in a file
// the test reads; no result reaches the app's log.
func TestExtensionFromATerminal(t *testing.T) {
	t.Parallel()
	everything := testbin.Everything(t)
	out := filepath.Join(t.TempDir(), "out")
	script := `exec >` + out + ` 2>&1
krad tool everything; echo "list=$?"
krad tool everything greet --arg name='Ada Lovelace'; echo "greet=$?"
krad tool everything 'greet (structured)' --json '{"name":"Bo"}'; echo "structured=$?"
krad tool everything greet --arg name='Ada' --raw; echo "raw=$?"
krad tool everything nope; echo "nope=$?"
krad tool everything greet --arg name:=5; echo "schema=$?"
krad tool hostonly; echo "hostonly=$?"
krad tool broken; echo "broken=$?"
krad tool silent; echo "silent=$?"
krad tool tracker; echo "tracker=$?"
echo END; sleep 60`
	log := &apptest.Buffer{}
	start(t, withTerminals(app.TerminalSpec{Title: "agent", Command: script}), func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Extensions = extension.Config{Timeout: 3 * time.Second, Extensions: []extension.Spec{
			{Name: "everything", Command: []string{everything}},
			{Name: "hostonly", Command: []string{everything}, Environments: []string{"build"}},
			{Name: "broken", Command: []string{"sh", "-c", `echo "broken: no credentials in $BROKEN_HOME" >&2; exit 1`}, Env: map[string]string{"BROKEN_HOME": "/nowhere"}},
			{Name: "silent", Command: []string{"sleep", "600"}},
		}}
	})
	text := scriptOutput(out, 90*time.Second)
	for _, want := range []string{
		"TOOL                               DESCRIPTION\n",
		"greet                              say hi\n",
		"list=0",
		"Hi Ada Lovelace\ngreet=0",
		`{"message":"Hi Bo"}` + "\nstructured=0",
		`{"extension":"everything","result":{"content":[{"type":"text","text":"Hi Ada"}]}}` + "\nraw=0",
		"krad: error: ExtensionTool: the app answered not_found: extension everything has no tool nope; its tools: elicit (form), ",
		"krad: hint: krad tool EXT lists the tools of extension EXT\nnope=1",
		"schema=",
		"krad: error: ExtensionTool: the app answered forbidden: extension hostonly is not lent to environment main",
		"hostonly=3",
		"krad: error: ExtensionTool: the app answered unavailable: extension broken could not start",
		"its last stderr line: broken: no credentials in /nowhere",
		"broken=1",
		"TimedOut",
		"silent=4",
		"krad: error: ExtensionTool: the app answered not_found: no extension tracker: the extensions of environment main are everything, broken, silent\n" +
			"krad: hint: [[extension]] tables in krad-ade's config.toml name the extensions",
		"tracker=1",
		"END",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the terminal's output lacks %q", want)
		}
	}
	// Arguments that fail greet's schema (name must be a string) are refused, by the server or
	// by the app: never a greeting.
	if strings.Contains(text, "Hi 5") || strings.Contains(text, "schema=0") {
		t.Errorf("greet with name 5 was answered as a success")
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the terminal's output:\n%s", text)
	}
	if l := log.String(); !strings.Contains(l, "extension started") || strings.Contains(l, "Hi Ada") || strings.Contains(l, "Hi Bo") {
		t.Errorf("the app's log says nothing of the extension's start, or holds a result:\n%s", l)
	}
}
