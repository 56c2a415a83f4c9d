//go:build !unix

package cli

import (
	"context"
	"os"
)

// watchReader returns when ctx ends: only the signals end an operation here.
func watchReader(ctx context.Context, f *os.File) { <-ctx.Done() }
