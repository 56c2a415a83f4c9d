package app

// ForgetPromptStarts forgets when the prompts of the last minute started, so that a benchmark
// of many prompts measures the prompts, not the rate limit.
func ForgetPromptStarts(a *App) {
	a.prompts.mu.Lock()
	defer a.prompts.mu.Unlock()
	clear(a.prompts.started)
}

// EndedHook and EndedHookCommand are the app's pane-died hook, for a test that sets it on a tmux
// server of its own.
const EndedHook = endedHook

var EndedHookCommand = endedHookCommand

// EditorHint is the line Code's unavailable answer gives for system goos.
func EditorHint(goos string) string { return editorHint(goos) }
