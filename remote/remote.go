// Package remote prepares an SSH host for krad-ade's terminals: it finds the host's platform and
// installs the static krad there.
//
// Everything runs through a [Host], a way to run one command line with a given stdin; [SSH] is
// the one over an *ssh.Client, each command in a session of its own. Per host the app:
//
//  1. calls [Probe] for the [Platform] (`uname -s -m`: linux/amd64 or linux/arm64, anything else an
//     [*UnsupportedError]);
//  2. picks the static krad for it ([Platform.StaticName], like krad-linux-arm64), reads it with
//     [ReadBinary] and calls [Install], which puts it in ~/.krad-ade/bin/<version>/ as krad and
//     krad-ade-agents, once per version;
//  3. gives each terminal it opens there the variables of package api ([api.TerminalVars]), with
//     the folder Install returned first on PATH.
//
// The commands are sh scripts from package remote/shell: they run under sh whatever the user's
// login shell, and report between marker lines, so a ~/.bashrc that prints does not confuse them.
// The package knows nothing of the agents bus: it moves files and runs commands.
//
// # Security model
//
// What Install puts in ~/.krad-ade/bin/<version> goes first in the PATH of the host's terminals,
// where the agents run. So no one but the user may choose it: ~/.krad-ade, bin and the version
// folder are refused when they are symbolic links, not folders, or owned by another user, and
// made owner-only (0700) otherwise; the binary is written to a fresh temporary file in that folder,
// which only the user can enter, checked against the CRC and size of the app's copy before it
// runs, then run once to say its SHA-256 (of the very file that runs), which must be the one the
// app computed from its own copy, and renamed over the old names, never written in place, so a
// terminal never runs half a file.
// An installed set is trusted again only if its files are regular files of the user's with that
// SHA-256, or, for a look given what an earlier one verified ([Verified]), if they are still the
// very files it hashed: the same device, inode, size, modification and change times, which no
// one but the user and root can keep while changing a file's bytes.
//
// The SHA-256 of a copy, and of an installed krad that runs, is the one it computes of its own
// file (/proc/self/exe) as it runs, in the run the install makes anyway: a copy is run only once
// its bytes passed the CRC and size of the app's (gzip's own check as it unpacks, or cksum's), and
// a copy that is not the app's binary cannot print the app's SHA-256, which it is neither given
// nor holds. A binary the user put there themselves could say anything of itself, as it could do
// anything else as the user.
//
// The package does not protect against root on the host, nor against other programs of the same
// user, which can replace anything in the user's home (their ~/.bashrc included). The terminals'
// variables there hold no secret: the app gives them the path of the token file (package
// tokenfile), never the token.
package remote
