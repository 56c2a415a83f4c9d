package sshconfig

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/internal/termsafe"
)

// matchExecTimeout bounds a Match exec command. ssh waits for it however long it takes; a
// long-running app must not hang on one, so past this it is ended, and the attempt fails and is
// retried.
const matchExecTimeout = 10 * time.Second

const (
	// stderrTail is how much of a Match exec command's stderr is kept: enough for its last
	// lines.
	stderrTail = 2048
	// killGrace is how long a Match exec command past its time has to end after SIGTERM,
	// before SIGKILL.
	killGrace = time.Second
)

// exec runs a Match exec command, its %-tokens expanded as ssh expands them, and says whether
// it exited with status 0. host and user are the host name and user the criteria see.
//
// ssh puts the tokens' values into the command as they are, for the shell to read; here a value
// holding a character the shell would act on (white space, quotes, $, ;, …) is refused instead:
// the host names and users of a config are not commands.
func (ev *sshEval) exec(command, host, user string) (bool, error) {
	port := ev.o.get("port")
	if port == "" {
		port = "22"
	}
	alias := ev.o.get("hostkeyalias")
	if alias == "" {
		alias = host
	}
	long, _ := os.Hostname()
	short, _, _ := strings.Cut(long, ".")
	vals := map[byte]string{
		'd': ev.r.home, 'h': host, 'i': strconv.Itoa(os.Getuid()), 'k': alias, 'L': short,
		'l': long, 'n': ev.original, 'p': port, 'r': user, 'u': ev.r.localUser,
	}
	for i := 0; i+1 < len(command); i++ {
		if command[i] != '%' {
			continue
		}
		i++
		if v, ok := vals[command[i]]; ok && !shellInert(v) {
			return false, &ConfigError{Host: ev.original, Key: "Match exec",
				Reason: fmt.Sprintf("%%%c is %s, which has characters the shell would act on", command[i], termsafe.Quote(v))}
		}
	}
	cmd, err := expandTokens(command, vals)
	if err != nil {
		return false, &ConfigError{Host: ev.original, Key: "Match exec", Reason: err.Error()}
	}
	run := ev.r.runExec
	if run == nil {
		run = runMatchExec
	}
	status, err := run(cmd, matchExecTimeout)
	if err != nil {
		return false, fmt.Errorf("Match exec %s: %w", strconv.Quote(cmd), err)
	}
	return status == 0, nil
}

// shellInert says whether s reads as itself in a shell command: letters, digits, and . _ - + /
// : @ , = and %.
func shellInert(s string) bool {
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+/:@,=%", r)
		if !ok {
			return false
		}
	}
	return true
}

// errExecTimeout is a Match exec command that ran past its time.
var errExecTimeout = errors.New("did not finish in time")
