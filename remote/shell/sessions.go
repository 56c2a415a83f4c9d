package shell

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// What an SSH session started on a host can outlive the session: sshd runs the command in a
// session of its own (setsid), led by the user's login shell, and when the client closes the
// channel or the whole connection, sshd ends nothing of it (without a terminal there is no
// hangup). A login shell whose start-up files loop, or a command of ours that hangs, runs on for
// good. The client may ask sshd to signal the session (the SSH "signal" request: sshd then kills
// the session's process group), but sshd refuses that for root, whose sessions run without
// privilege separation. So the app ends what an attempt it gave up started from the host itself,
// with EndSessions, from a shell of its own there.

// The ways [EndSessions] picks the sessions it ends (its first argument).
const (
	// EndConnection: the sessions of the SSH connection that runs the script, but the script's
	// own: those led by a child of the sshd process that is the parent of the script's own
	// session's leader. With patterns, only those whose leader's command line matches one.
	EndConnection = "connection"
	// EndMarked: the user's sessions led by a process whose command line matches one of the
	// patterns: a login shell that never got past its start-up files still holds there the whole
	// command it was given, and a random word in that command names it alone.
	EndMarked = "marked"
)

// EndSessions ends sessions of the host's user, picked as its first argument says ([EndConnection],
// [EndMarked]) with the patterns that follow (each a pattern of sh's case, * any text, which a
// leader's command line, its arguments joined by spaces, holds somewhere): every process of each (the kernel's session: its
// leader, and whatever it started that did not leave the session with setsid, as a tmux server
// does), with SIGKILL, until a look finds none it has not signalled yet (three looks at most:
// one killed a moment ago may still run at the next). It reports "ok N", N the processes it
// signalled. It reads Linux's /proc; on a host without one it ends nothing and
// reports "ok 0".
var EndSessions = Script{Name: "ENDSESSIONS", Body: `
krad_mode=$1; shift;
if [ ! -r /proc/self/stat ]; then krad_say ok 0; exit 0; fi;
krad_stat() { krad_l=; read -r krad_l < "/proc/$1/stat" 2>/dev/null || return 1; krad_l=${krad_l##*")"}; set -- $krad_l; krad_state=$1; krad_ppid=$2; krad_sid=$4; };
krad_stat $$ || krad_fail "read /proc of the script itself";
krad_me=$krad_sid; krad_sshd=;
if [ "$krad_mode" = connection ]; then
  krad_stat "$krad_me" || krad_fail "read /proc of the script's session";
  krad_sshd=$krad_ppid;
fi;
krad_ends=;
for krad_d in /proc/[0-9]*; do
  krad_p=${krad_d#/proc/};
  krad_stat "$krad_p" || continue;
  if [ "$krad_p" != "$krad_sid" ] || [ "$krad_p" = "$krad_me" ]; then continue; fi;
  if [ "$krad_mode" = connection ]; then
    if [ "$krad_ppid" != "$krad_sshd" ]; then continue; fi;
  elif [ ! -O "$krad_d" ]; then continue; fi;
  if [ $# -gt 0 ]; then
    krad_cmd=$(tr '[:cntrl:]' ' ' < "$krad_d/cmdline" 2>/dev/null);
    krad_hit=;
    for krad_w in "$@"; do case "$krad_cmd" in *$krad_w*) krad_hit=1;; esac; done;
    if [ -z "$krad_hit" ]; then continue; fi;
  fi;
  krad_ends="$krad_ends $krad_p";
done;
krad_n=0; krad_killed=;
if [ -n "$krad_ends" ]; then
  for krad_round in 1 2 3; do
    krad_k=0;
    for krad_d in /proc/[0-9]*; do
      krad_p=${krad_d#/proc/};
      krad_stat "$krad_p" || continue;
      case "$krad_state" in Z|X) continue;; esac;
      case " $krad_ends " in *" $krad_sid "*) if kill -KILL "$krad_p" 2>/dev/null; then case " $krad_killed " in *" $krad_p "*) ;; *) krad_killed="$krad_killed $krad_p"; krad_k=$((krad_k+1));; esac; fi;; esac;
    done;
    krad_n=$((krad_n+krad_k));
    if [ "$krad_k" -eq 0 ]; then break; fi;
  done;
fi;
krad_say ok "$krad_n";
`}

// EndedSessions reads what a run of [EndSessions] reported: how many processes it ended.
func EndedSessions(stdout []byte, runErr error) (int, error) {
	lines, err := EndSessions.Result(stdout, runErr)
	if err != nil {
		return 0, err
	}
	if len(lines) != 1 {
		return 0, fmt.Errorf("the host's script reported %d lines, not the count of the processes it ended", len(lines))
	}
	n, err := strconv.Atoi(lines[0])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("the host's script reported %s, not the count of the processes it ended", termsafe.QuoteMax(lines[0], 40))
	}
	return n, nil
}

// Pattern is a pattern for [EndSessions] that matches a command line holding words, one after the
// other, with anything between them (quotes a shell put around them, other arguments): a
// character of a word that a pattern would read (*, ?, [) matches any character.
func Pattern(words ...string) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = strings.Map(func(r rune) rune {
			if r == '*' || r == '?' || r == '[' || r == '\\' {
				return '?'
			}
			return r
		}, w)
	}
	return strings.Join(parts, "*")
}
