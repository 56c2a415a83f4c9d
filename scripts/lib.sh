# Shared by scripts/start and scripts/test. Sourced, not run.

# need_go stops with a clear message when Go is missing or too old.
need_go() {
  if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
      export PATH="/usr/local/go/bin:$PATH"
    else
      echo "krad: error: Go is not installed (go 1.26.7 or later is needed)" >&2
      echo "krad: hint: install Go from https://go.dev/dl/ or your distribution's golang package, then run this again" >&2
      exit 1
    fi
  fi
  local v
  v=$(go env GOVERSION)
  case "$v" in
    go1.26.[7-9]*|go1.26.[1-9][0-9]*|go1.2[7-9]*|go1.[3-9][0-9]*|go[2-9]*) ;;
    *) echo "krad: error: $v is too old: go 1.26.7 or later is needed (go.mod: lipgloss v2.1.0 needs it)" >&2; exit 1 ;;
  esac
}

# build_bin DIR builds the programs into DIR: krad-ade, krad, and krad-ade-agents and
# krad-ade-askpass (the same
# executable as krad, chosen by the name it is called by). Without cgo: statically linked
# programs start about a millisecond sooner, which an agent's hooks calling krad notice. Beside
# them, the static krad the app installs on SSH hosts from its own folder: krad-linux-amd64 and
# krad-linux-arm64 with their .sha256 and .gz (build/linux-static/build, which proves them static).
build_bin() {
  local dir=$1
  mkdir -p "$dir"
  CGO_ENABLED=0 go build -trimpath -o "$dir/" ./cmd/krad-ade ./cmd/krad
  ln -f "$dir/krad" "$dir/krad-ade-agents"
  ln -f "$dir/krad" "$dir/krad-ade-askpass"
  build/linux-static/build "$dir" >/dev/null
}

# need_debs PKG:CMD... installs, through apt-get, each Debian package whose command is missing.
# Without root it says exactly what to install and stops.
need_debs() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair#*:}" >/dev/null 2>&1 || missing+=("${pair%%:*}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    # Not Debian: macOS, say. Name the commands; Homebrew's packages are named after them.
    local cmds=()
    for pair in "$@"; do
      command -v "${pair#*:}" >/dev/null 2>&1 || cmds+=("${pair#*:}")
    done
    echo "krad: error: missing: ${cmds[*]} (Debian's packages: ${missing[*]})" >&2
    if [ "$(uname -s)" = Darwin ]; then
      echo "krad: hint: install them with Homebrew (brew install ${cmds[*]##*/}) or MacPorts, then run this again" >&2
    else
      echo "krad: hint: install them with your system's package manager, then run this again" >&2
    fi
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "krad: error: missing Debian packages: ${missing[*]}" >&2
    echo "krad: hint: as root: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "krad: installing ${missing[*]} with apt-get" >&2
  $sudo apt-get update -qq >/dev/null || true
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; then
    echo "krad: error: apt-get could not install: ${missing[*]}" >&2
    echo "krad: hint: run 'apt-get install -y ${missing[*]}' yourself and read what it says" >&2
    exit 1
  fi
}

# arm64_emulation makes this machine run linux/arm64 programs: Debian's qemu-user-static
# registered in binfmt_misc with the F flag (the kernel opens the interpreter at registration, so
# containers, which have no qemu, run arm64 programs too). It installs qemu-user-static and
# binfmt-support, mounts binfmt_misc, and enables qemu-aarch64 where it must. When it cannot (not
# root, or the kernel refuses) it prints why on stdout and returns 1.
arm64_emulation() {
  local entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
  registered() { [ -r "$entry" ] && [ "$(head -n1 "$entry")" = enabled ] && grep -q '^flags: .*F' "$entry"; }
  registered && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "qemu-aarch64 is not registered in binfmt_misc with the F flag, and only root may register it"
    return 1
  fi
  need_debs qemu-user-static:qemu-aarch64-static binfmt-support:update-binfmts >&2
  local out
  if [ ! -e /proc/sys/fs/binfmt_misc/status ] &&
    ! out=$(mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>&1); then
    echo "the kernel refused to mount binfmt_misc on /proc/sys/fs/binfmt_misc: $out"
    return 1
  fi
  update-binfmts --import qemu-aarch64 >/dev/null 2>&1 || true
  if ! out=$(update-binfmts --enable qemu-aarch64 2>&1) && ! registered; then
    echo "the kernel refused qemu-aarch64's registration in binfmt_misc: $out"
    return 1
  fi
  if ! registered; then
    echo "qemu-aarch64 is registered in binfmt_misc without the F flag (containers cannot run arm64 programs): update-binfmts --disable qemu-aarch64, then run this again"
    return 1
  fi
}

# end_on_exit PID DIR: on the script's way out, the background job PID ends (it is still running
# when a stage failed) and DIR is removed, and the script exits with the status it had: 0 after
# its last line, else the failed stage's, never that of the job it killed. errexit is off within
# the trap: under set -e, the kill of a job that had already ended failed, and that failure alone
# made a passing run exit 1 (CI, 2026-12-06). scripts/lib_test.go runs both ways out.
end_on_exit() {
  _end_pid=$1 _end_dir=$2
  trap 'rc=$?; set +e; kill "$_end_pid" 2>/dev/null; wait "$_end_pid" 2>/dev/null; rm -rf "$_end_dir"; exit "$rc"' EXIT
}

# fuzz_runs LOG: how many runs Go's fuzzer had made when it last reported in LOG (its
# "execs: N"), and 1000 when that is fewer or it made no report. scripts/test gives a target that
# failed its own -fuzztime deadline this many runs, as a count (-test.fuzztime=Nx), which sets no
# deadline; scripts/lib_test.go runs it on a real fuzzer's log.
fuzz_runs() {
  local n
  n=$(grep -o 'execs: [0-9]*' "$1" | tail -n 1 | grep -o '[0-9]*$' || true)
  if [ -z "$n" ] || [ "$n" -lt 1000 ]; then
    n=1000
  fi
  echo "$n"
}
