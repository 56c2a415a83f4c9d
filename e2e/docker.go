//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// label is the key of the label on every Docker object the tests create. Its value is the run's
// id on containers, networks and per-run images, and hostImageLabel on the cached host image.
const label = "krad-e2e"

// dockerTimeout bounds every docker command but the image builds.
const dockerTimeout = 2 * time.Minute

// docker runs the docker CLI with args and returns its standard output without the trailing
// newline. A failure's error carries what docker said on stderr.
func docker(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	return dockerNoTimeout(ctx, stdin, args...)
}

// dockerNoTimeout is docker bounded by ctx alone, for the image builds.
func dockerNoTimeout(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = stdin
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		what := args[0]
		if (what == "network" || what == "image") && len(args) > 1 {
			what += " " + args[1]
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("docker %s: %w (after %v)", what, ctx.Err(), dockerTimeout)
		}
		return "", fmt.Errorf("docker %s: %w: %s", what, err, tail(stderr.String(), 2000))
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// tail is the last n bytes of s, trimmed, for error messages.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// lines splits docker's output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// dockerAnswers says whether a Docker engine answers, and if not, why.
func dockerAnswers(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("the docker CLI is not on PATH: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := dockerNoTimeout(ctx, nil, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	return nil
}

// labelledObjects lists the containers and networks labelled krad-e2e, by the value of that label.
type labelledObjects struct {
	containers map[string][]string // run id → container ids
	networks   map[string][]string // run id → network ids
	images     map[string][]string // run id → image ids
}

// listLabelled finds every container, network and image labelled krad-e2e.
func listLabelled(ctx context.Context) (labelledObjects, error) {
	objs := labelledObjects{map[string][]string{}, map[string][]string{}, map[string][]string{}}
	for _, kind := range []struct {
		list []string
		into map[string][]string
	}{{[]string{"ps", "-a"}, objs.containers}, {[]string{"network", "ls"}, objs.networks}} {
		out, err := docker(ctx, nil, append(kind.list, "--no-trunc", "--filter", "label="+label,
			"--format", `{{.ID}} {{.Label "`+label+`"}}`)...)
		if err != nil {
			return objs, err
		}
		for _, line := range lines(out) {
			id, run, _ := strings.Cut(line, " ")
			kind.into[run] = append(kind.into[run], id)
		}
	}
	out, err := docker(ctx, nil, "image", "ls", "--no-trunc", "--quiet", "--filter", "label="+label)
	if err != nil {
		return objs, err
	}
	for _, id := range uniq(lines(out)) {
		run, err := docker(ctx, nil, "image", "inspect", "--format", `{{index .Config.Labels "`+label+`"}}`, id)
		if err != nil {
			continue // removed meanwhile
		}
		objs.images[run] = append(objs.images[run], id)
	}
	return objs, nil
}

// removeRun removes the containers, then the networks, then the images of one run. It goes on
// past errors and returns them all.
func removeRun(ctx context.Context, objs labelledObjects, run string) error {
	var errs []error
	if ids := objs.containers[run]; len(ids) > 0 {
		if _, err := docker(ctx, nil, append([]string{"rm", "-f", "-v"}, ids...)...); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range objs.networks[run] {
		if _, err := docker(ctx, nil, "network", "rm", id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range objs.images[run] {
		if _, err := docker(ctx, nil, "image", "rm", "-f", id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
