package remote_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// Run with:
//
//	go test -run '^$' -bench Install -benchtime 20x ./remote
//
// BenchmarkInstall is the first install of the static krad on a host (a real sshd on loopback,
// whose end runs on the same cores as the app's), each into a home that does not have it:
// gzipped, as to a host with gzip, and whole, as to one without; beside the baseline, the same
// bytes copied with no check at all over the same connection (cat > FILE, and gzip -dc > FILE for
// the gzipped ones), in the same run. sent-B/op is what went over the wire. On loopback the wire
// costs little and unpacking costs CPU; over a real link the bytes are most of it.
//
// The -fresh ones make each install over a connection of its own, as a first start does: an sshd
// process that has carried no large transfer yet grows its buffer for the copy in steps of new
// memory, which costs it far more CPU than the same bytes over a connection that carried some
// before. Two more fresh baselines ask whether a consumer slower than sshd is what makes it grow:
// the packed bytes copied to a file (cat, as fast as a pipe drains), and to a file then unpacked
// from it. They are not: the packed copy costs as much by cat as by gzip -dc, and the two steps
// more (docs/benchmarks/bridge.md). Where the CPU goes, by program:
//
//	go test -c -o /tmp/remote.test ./remote && cd remote &&
//	  perf record -F 999 -o /tmp/install.perf -- /tmp/remote.test -test.run '^$' -test.bench 'Install/.*fresh' -test.benchtime 20x
//	perf report -i /tmp/install.perf --sort comm --stdio
func BenchmarkInstall(b *testing.B) {
	bin := binary(b)
	srv, ssh := start(b, "", sshdtest.Options{})
	ctx := context.Background()
	whole := bin
	whole.Packed = nil
	clear := func(b *testing.B) {
		b.StopTimer()
		if err := os.RemoveAll(filepath.Join(srv.Home, ".krad-ade")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	for _, c := range []struct {
		name  string
		fresh bool
		run   func(h remote.Host) error
	}{
		{"gzip", false, func(h remote.Host) error { _, err := remote.Install(ctx, h, bin); return err }},
		{"whole", false, func(h remote.Host) error { _, err := remote.Install(ctx, h, whole); return err }},
		{"baseline-cat-gzip", false, func(h remote.Host) error {
			_, err := h.Run(ctx, "gzip -dc > ~/.krad-ade-copy", bytes.NewReader(bin.Packed))
			return err
		}},
		{"baseline-cat", false, func(h remote.Host) error {
			_, err := h.Run(ctx, "cat > ~/.krad-ade-copy", bytes.NewReader(mustRead(b, staticKrad(b))))
			return err
		}},
		{"gzip-fresh", true, func(h remote.Host) error { _, err := remote.Install(ctx, h, bin); return err }},
		{"whole-fresh", true, func(h remote.Host) error { _, err := remote.Install(ctx, h, whole); return err }},
		{"baseline-cat-gzip-fresh", true, func(h remote.Host) error {
			_, err := h.Run(ctx, "gzip -dc > ~/.krad-ade-copy", bytes.NewReader(bin.Packed))
			return err
		}},
		{"baseline-cat-packed-fresh", true, func(h remote.Host) error {
			_, err := h.Run(ctx, "cat > ~/.krad-ade-copy.gz", bytes.NewReader(bin.Packed))
			return err
		}},
		{"baseline-cat-then-gzip-fresh", true, func(h remote.Host) error {
			_, err := h.Run(ctx, "cat > ~/.krad-ade-copy.gz && gzip -dc ~/.krad-ade-copy.gz > ~/.krad-ade-copy", bytes.NewReader(bin.Packed))
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := &countingHost{Host: ssh}
			for range b.N {
				clear(b)
				if c.fresh {
					b.StopTimer()
					client := srv.Dial(b)
					h.Host = remote.SSH(client)
					b.StartTimer()
					defer client.Close()
				}
				if err := c.run(h); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(h.sent)/float64(b.N), "sent-B/op")
		})
	}
}
