package app_test

import (
	"context"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// BenchmarkAskpass: one git prompt, answered at once by a Prompter, from the Git caller's first
// request to the answer in hand (what krad-ade-askpass costs besides its process start), beside
// the baseline of a List, one request the app answers from memory, in the same run:
//
//	go test -run '^$' -bench Askpass -benchtime 200x ./app
func BenchmarkAskpass(b *testing.B) {
	h := start(b, withTerminals(app.TerminalSpec{Title: "sh"}))
	h.app.SetPrompter(newTestPrompter(func(app.Prompt) (string, error) { return "pw", nil }))
	ctx := context.Background()
	b.Run("baseline=List", func(b *testing.B) {
		c := h.as(1)
		for b.Loop() {
			if _, err := c.Call(ctx, api.NewRequest(api.List, nil)); err != nil {
				b.Fatal(err)
			}
		}
	})
	key := h.askKey(1)
	b.Run("askpass", func(b *testing.B) {
		for b.Loop() {
			// The rate limit is forgotten between prompts: this measures a prompt.
			app.ForgetPromptStarts(h.app)
			if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 1, Key: key}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
