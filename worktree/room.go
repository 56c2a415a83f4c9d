package worktree

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
)

// checkoutSize is about how much room a checkout of rev takes on a disk with blocks of block
// bytes: each file's size rounded up to whole blocks (a file of 5 bytes takes a block).
func checkoutSize(ctx context.Context, dir, rev string, block uint64) (uint64, error) {
	out, err := git(ctx, gitRun{dir: dir}, "ls-tree", "-r", "-z", "--format=%(objectsize)", "--end-of-options", rev)
	if err != nil {
		return 0, err
	}
	sizes, err := parseSizes(out)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, n := range sizes {
		total += (n + block - 1) / block * block
	}
	return total, nil
}

// parseSizes reads `git ls-tree -z --format=%(objectsize)`: a size in bytes per entry, NUL-ended,
// or "-" for a submodule, whose files a worktree does not check out.
func parseSizes(out []byte) ([]uint64, error) {
	sizes := []uint64{}
	for len(out) > 0 {
		i := bytes.IndexByte(out, 0)
		if i < 0 {
			return nil, fmt.Errorf("git ls-tree's output does not read: it does not end with a NUL")
		}
		field := string(out[:i])
		out = out[i+1:]
		if field == "-" {
			continue
		}
		n, err := strconv.ParseUint(field, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("git ls-tree's output does not read: a size that is not a number")
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// noRoomFor says, when a checkout of rev could not be written into a folder under parent, whether
// that is because it does not fit on parent's disk: git says "unable to write file" without the
// system's reason when the disk fills midway. It returns an error that says so (wrapping
// ErrDiskFull), or nil when the checkout would fit, or when this cannot be told.
func (r *Repo) noRoomFor(ctx context.Context, rev, parent string) error {
	free, block, ok := diskRoom(parent)
	if !ok || block == 0 {
		return nil
	}
	need, err := checkoutSize(ctx, r.Top, rev, block)
	if err != nil || need <= free {
		return nil
	}
	return &noRoomError{need: need, free: free}
}

// noRoomError is noRoomFor's finding: a checkout that does not fit. It is an ErrDiskFull.
type noRoomError struct{ need, free uint64 }

func (e *noRoomError) Error() string {
	return fmt.Sprintf("the checkout's files need about %s, and the disk has %s free", bytesOf(e.need), bytesOf(e.free))
}

func (e *noRoomError) Is(target error) bool { return target == ErrDiskFull }

// bytesOf writes n bytes for a person: 12 KiB, 3.4 MiB.
func bytesOf(n uint64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatUint(n, 10) + " bytes"
	case n < 1<<20:
		return strconv.FormatUint(n>>10, 10) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}
