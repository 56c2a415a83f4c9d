package agenthooks

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// CodexChain is the notify program the person's Codex config names (config.toml, its text):
// the one Codex would have run at a turn's end without the app's -c notify, which the hook runs
// after its report so that it still runs. It is nil when the config names none, names the
// companion's own hook (it would call itself), or cannot be read.
func CodexChain(configTOML []byte) []string {
	var c struct {
		Notify []string `toml:"notify"`
	}
	if _, err := toml.Decode(string(configTOML), &c); err != nil || len(c.Notify) == 0 || c.Notify[0] == "" {
		return nil
	}
	if c.Notify[0] == Companion || strings.HasSuffix(c.Notify[0], "/"+Companion) {
		return nil
	}
	return c.Notify
}

// PrintConfig is what `krad hooks --print-config KIND` prints: what to add to that agent's own
// settings so that an agent a person starts by hand, in one of krad-ade's terminals, reports its
// state as those the app starts do. ok is false for a kind krad does not know.
func PrintConfig(kind string) (text string, ok bool) {
	indent := func(v any) string { return string(marshal(v, true)) + "\n" }
	switch kind {
	case Claude:
		return "// ~/.claude/settings.json (or a project's .claude/settings.json): add to its \"hooks\"\n" +
			indent(map[string]any{"hooks": hooksOf(Claude)}), true
	case Gemini:
		return "// ~/.gemini/settings.json: add to its \"hooks\"\n" +
			indent(map[string]any{"hooks": hooksOf(Gemini)}), true
	case Codex:
		return fmt.Sprintf(`# ~/.codex/config.toml: the program Codex runs when a turn ends (it keeps one:
# this replaces a notify line you have)
notify = %s

# or, for every state, ~/.codex/hooks.json (then trust them once: /hooks in Codex)
%s`, CodexNotifyTOML(), indent(map[string]any{"hooks": hooksOf(Codex)})), true
	}
	return "", false
}
