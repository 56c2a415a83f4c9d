package app

// ForgetPromptStarts forgets when the prompts of the last minute started, so that a benchmark
// of many prompts measures the prompts, not the rate limit.
func ForgetPromptStarts(a *App) {
	a.prompts.mu.Lock()
	defer a.prompts.mu.Unlock()
	clear(a.prompts.started)
}
