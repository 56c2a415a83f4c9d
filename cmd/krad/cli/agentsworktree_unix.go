//go:build unix

package cli

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// watchReader returns when the reader at the other end of f, a pipe or a socket, has gone (poll
// says POLLERR or POLLHUP), or when ctx ends. It is how `krad-ade-agents worktree` learns that
// its SSH session was closed when no signal came: sshd closes its end of the command's stdout as
// the session closes, but it signals the command only when asked, and never for root. A file or
// a terminal that stays open is never gone.
func watchReader(ctx context.Context, f *os.File) {
	fds := []unix.PollFd{{Fd: int32(f.Fd())}} // no events: only POLLERR, POLLHUP and POLLNVAL come
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, watchEvery)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil || n > 0 && fds[0].Revents&unix.POLLNVAL != 0:
			// Not a file poll can watch: the signals alone end the operation.
			<-ctx.Done()
			return
		case n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0:
			return
		}
	}
}

// watchEvery is how often, in milliseconds, watchReader looks whether ctx has ended.
const watchEvery = 200
