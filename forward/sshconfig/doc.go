// Package sshconfig resolves an SSH host through ssh_config as OpenSSH's ssh (9.x) resolves it:
// where to connect, as whom, with which keys, how to check the host's key, and the hops on the
// way. It is a reader, not a client: it dials nothing and reads no key.
//
//	h, warnings, err := sshconfig.Resolve(sshconfig.Options{Host: "buildbox"})
//	// h.HostName, h.Port, h.User, h.IdentityFiles, h.KnownHostsFiles, h.Jump, …
//
// The files are ~/.ssh/config, then /etc/ssh/ssh_config ([Options] names others, or [None]).
// They are read again on every call, so that an edit counts at the next connect.
//
// # What it matches of OpenSSH's readconf.c
//
// A differential test holds it against ssh -G, field for field, for every field [Host] has
// (sshg_test.go, over a corpus, and FuzzSSHG, over configs a grammar makes from the fuzzer's
// input): 1,053 of 1,053 fields agree on the corpus here with OpenSSH 9.2. What it does as ssh
// does:
//
//   - Lines are split as process_config_line splits them: the keyword, then white space or one
//     '=', then the arguments as argv_split reads them (double and single quotes, \' \" \\ and
//     "\ ", a '#' where an argument would start ends the line); the keyword's case does not
//     matter.
//   - Host patterns (* ? and !) are matched against the host as given; Match with host (the
//     HostName given so far), originalhost, user, localuser, exec, all, canonical and final,
//     each negated by '!', as match_cfg_line evaluates them: in order, every criterion must hold,
//     and an exec runs only when the criteria before it held.
//   - Include takes globs, relative to ~/.ssh (to /etc/ssh for the system's file), reads them in
//     place, conditional inside a block, 16 deep at most; an included file another user owns,
//     or that anyone else may write, is refused as ssh refuses it.
//   - The first value of each keyword wins; IdentityFile's add up. Of ProxyJump and ProxyCommand
//     the one read first wins (ProxyJump none leaves room for a later ProxyCommand).
//   - A Match that asks for "final", or CanonicalizeHostname on, reads the files a second time
//     with the host name the first reading gave. The host name ends up lower-case (addresses
//     aside).
//   - The keywords resolved: HostName (with %h), Port, User, IdentityFile (with %d %h %i %k %L
//     %l %n %p %r %u %% and ~), IdentitiesOnly, IdentityAgent, ProxyJump (a,b, each as
//     [user@]host[:port] or ssh://…, each hop resolved through its own Host block, the first with
//     its own ProxyJump, as ssh -J does), ProxyCommand (with %h %n %p %r %%; only the first host
//     of a chain keeps its own), UserKnownHostsFile and GlobalKnownHostsFile (with tokens),
//     HostKeyAlias, StrictHostKeyChecking, HashKnownHosts, ConnectTimeout, ServerAliveInterval
//     and ServerAliveCountMax.
//
// # What it does not, on purpose
//
//   - A line ssh would refuse (an unclosed quote, an unknown Match criterion, extra arguments)
//     makes ssh give up on the whole file; here it is left out and returned as a [Warning]
//     naming the file and line, and the rest of the file counts. A Host or Match line left out
//     takes its block with it, rather than lend its lines to the block above. Keywords the
//     package does not resolve, known to ssh or not, are ignored.
//   - Without ServerAliveInterval ssh sends no keepalives; here the default is 15 s (× 3), since
//     keepalives are how a long-running connection notices it is dead. ServerAliveInterval 0
//     turns them off, as in ssh. No ConnectTimeout, or 0, is 15 s, not the system's TCP
//     timeout. Options override both, as ssh -o does, below a second if need be.
//   - With no IdentityFile, the defaults are id_rsa, id_ecdsa and id_ed25519: security keys
//     (id_*_sk) need hardware, ssh has no XMSS by default and no longer offers DSA.
//   - A relative path (IdentityFile, known_hosts) is taken from ~/.ssh, not the current folder,
//     which means nothing to a long-running app; "~" and %d are [Options.Home] ($HOME), not the
//     password database's home; "~user/" is left as it is.
//   - "host:2222" as a destination is port 2222, as ssh://host:2222 is.
//   - Match exec runs under /bin/sh, not $SHELL. A %-token whose value holds characters the
//     shell acts on (a user "a;b") is refused with a [*ConfigError] instead of run, and a
//     command still running after 10 s is ended with its process group, an error that a retry
//     may fix. Match exec runs on Linux only.
//   - CanonicalizeHostname does not look the name up in DNS (the second reading still happens).
//
// # Why not github.com/kevinburke/ssh_config
//
// Measured on a corpus of configs kept outside this repository, held against ssh -G: this
// reader agrees on 284 of 284 fields, github.com/kevinburke/ssh_config v1.6.0 on 270. That
// library refuses Match user, originalhost and exec, and matches Match host against the alias
// rather than the HostName given so far; the configs people write for bastions and per-network
// settings are the ones that use them.
//
// # Security
//
// Nothing read from the files reaches an error or a warning with control characters in it. Host
// names are checked as host names (a leading '-', which every command would read as an option,
// is refused), ports as numbers, and a ProxyCommand's %r must be a user name without characters
// the shell acts on. The only command run is the user's own Match exec, as ssh runs it.
package sshconfig
