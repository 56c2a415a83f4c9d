package ui

import (
	"context"
	"errors"
	"io"

	tea "charm.land/bubbletea/v2"
)

// Run shows the UI on the terminal in and out until the person quits (q, Ctrl-C) or ctx is done,
// then gives the terminal back as it found it. env is the process's environment (TERM, NO_COLOR).
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer, env []string) error {
	p := tea.NewProgram(New(ctx, opts),
		tea.WithContext(ctx),
		tea.WithInput(in),
		tea.WithOutput(out),
		tea.WithEnvironment(env),
		// krad-ade's own signal handling stops the app; the UI follows through ctx.
		tea.WithoutSignalHandler(),
	)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
