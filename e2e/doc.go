//go:build e2e

// Package e2e is the ground krad's end-to-end tests stand on: OpenSSH hosts that are really other
// machines, each a Docker container with its own address, filesystem and loopback, on networks the
// tests create, cut and restore.
//
// There is no container registry, so nothing is pulled: the hosts' image is built from Debian's
// packages with mmdebstrap and `docker import`, and cached by a hash of its recipe (see
// [HostImage]). Docker is driven through its CLI.
//
// A test package calls [Main] from its TestMain. Then a test makes a network with a pinned subnet
// ([NewNetwork]), starts hosts at pinned addresses ([StartHost]), and writes an ssh_config and a
// known_hosts that name those hosts ([WriteSSHConfig]):
//
//	lan := e2e.NewNetwork(t, "lan", 30) // 172.29.30.0/24
//	a := e2e.StartHost(t, "a", lan, lan.Addr(10), e2e.HostOptions{})
//	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "a", Host: a})
//	out, err := cfg.Command(ctx, "a", "uname -n").Output() // ssh -F cfg.Path a 'uname -n'
//
// e2e/README.md says how to run the suite, what it needs and what it caches.
//
// What it keeps to:
//   - Traffic goes only to the containers the tests started, at the addresses they pinned: no other
//     address, private or public, is ever a target. A subnet that overlaps an address of this
//     machine is refused before anything is created.
//   - Every container, network and image it creates is labelled krad-e2e, and it touches no Docker
//     object without that label. Objects of this run are removed when their test ends (also when it
//     fails) and again when the run ends; objects of a run that died (its lock on a file under the
//     cache folder is gone) are removed when the next run starts.
//   - A host image that cannot be built fails the tests that need it: it never skips them. A test
//     of an arm64 host ([HostOptions].Arch) is skipped only where this machine cannot run arm64
//     programs at all ([Emulate] says which step was refused).
package e2e
