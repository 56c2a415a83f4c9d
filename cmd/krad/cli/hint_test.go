package cli

import (
	"testing"

	"github.com/krad-ade/krad/api"
)

// TestHintsByReason: where the next step depends on which error of a code the app answered, krad
// reads the error's reason, not its message, whose words may change: each case here has words
// the hint must not depend on, and gives one hint with the reason and another without it.
func TestHintsByReason(t *testing.T) {
	terminal := api.Caller{Kind: api.CallerTerminal, Terminal: api.TerminalID{Environment: "main", Terminal: 2}}
	b := &bus{client: api.Client{From: terminal}}
	for _, tt := range []struct {
		req          api.Name
		code         api.ErrorCode
		reason       api.ErrorReason
		with, absent string // the hint with the reason, and without it
	}{
		{api.ExtensionTool, api.CodeNotFound, api.ReasonNoExtension,
			"[[extension]] tables in krad-ade's config.toml name the extensions",
			"krad tool EXT lists the tools of extension EXT"},
		{api.Changes, api.CodeNotFound, api.ReasonNoTerminal,
			"krad list --all shows the terminals of this environment",
			"krad groups lists this environment's groups and the branches retired ones kept"},
		{api.RunVariants, api.CodeConflict, api.ReasonTooManyTerminals,
			"krad list --all shows each terminal's state; krad read T shows what an ended one printed",
			"krad groups lists this environment's groups and the branches retired ones kept"},
		{api.Spawn, api.CodeBadRequest, api.ReasonNoAgent,
			"an [[agent]] table in config.toml, on the computer that runs krad-ade, adds an agent; the app reads them when it starts",
			"this krad and the app disagree about the request: use the krad that came with this krad-ade"},
		{api.CreateWorktree, api.CodeUnavailable, api.ReasonEnvironmentDown,
			"try again in a moment; krad watch says when the environment is back",
			""},
		{api.Code, api.CodeUnavailable, api.ReasonEnvironmentDown,
			"try again in a moment; krad watch says when the environment is back",
			""},
		{api.PickVariant, api.CodeConflict, api.ReasonNoIdentity,
			"set them where the repository is (on an SSH host, there): git config --global user.email you@example.com; git config --global user.name 'Your Name'; then pick again",
			"krad groups lists this environment's groups and the branches retired ones kept"},
		{api.PickVariant, api.CodeConflict, api.ReasonInTheWay,
			"git status --ignored in the main checkout shows its untracked and ignored files: move the ones named out of the way (or commit them), then pick again",
			"krad groups lists this environment's groups and the branches retired ones kept"},
		{api.Read, api.CodeUnavailable, api.ReasonNotServed,
			"waiting will not help: a later krad-ade serves it",
			"try again in a moment; krad watch says when the environment is back"},
	} {
		e := api.Errorf(tt.code, "words that say nothing krad reads")
		if got := b.hintFor(tt.req, e); got != tt.absent {
			t.Errorf("%s answered %s without a reason: hint %q, want %q", tt.req, tt.code, got, tt.absent)
		}
		if got := b.hintFor(tt.req, e.WithReason(tt.reason)); got != tt.with {
			t.Errorf("%s answered %s (%s): hint %q, want %q", tt.req, tt.code, tt.reason, got, tt.with)
		}
	}
}
