# shellcheck shell=bash
# Helpers shared by scripts/postgres, scripts/mariadb, scripts/cassandra and scripts/services.
# Sourced, never executed. The caller sets PROG (used in messages) before sourcing.

BATON_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Runtime state (pid files, generated configs, logs, Cassandra data): outside git, see .gitignore.
BATON_RUN="${BATON_RUN:-$BATON_ROOT/.cache/run}"
export DEBIAN_FRONTEND=noninteractive

die()  { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }

# show_tail FILE: the end of a log, indented, on stderr (used before dying).
show_tail() {
  [[ -s $1 ]] || return 0
  echo "---- last lines of $1 ----" >&2
  tail -n "${2:-25}" "$1" | sed 's/^/    /' >&2
  echo "----" >&2
}

# run_logged LOG CMD...: run CMD with no stdin, output appended to LOG; on failure show the
# log's tail and die naming the command and the log.
run_logged() {
  local log=$1; shift
  printf '+ %s\n' "$*" >>"$log"
  if ! "$@" >>"$log" 2>&1 </dev/null; then
    show_tail "$log"
    die "command failed: $*  (full log: $log)"
  fi
}

# cargo_build ARGS...: `cargo build --locked ARGS`, for what a script needs built (the `baton`
# command, a test worker). Under scripts/test, which has built every artifact in one
# invocation and exports that command as BATON_CARGO_BUILD (words after `cargo`), that command
# instead, a no-op then: cargo resolves features per selection of packages, so `-p baton-cli`
# alone would compile the dependency tree a second time for the same code.
cargo_build() {
  if [[ -n ${BATON_CARGO_BUILD:-} ]]; then
    local words
    read -r -a words <<<"$BATON_CARGO_BUILD"
    cargo "${words[@]}"
  else
    cargo build --locked "$@"
  fi
}

# pkg_installed PKG: true if the Debian package is installed.
pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# apt_install LOG PKG...: install the missing packages. `apt-get update` runs at most once,
# and only when the install from the current package lists fails.
apt_install() {
  local log=$1; shift
  local missing=() p
  for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  command -v apt-get >/dev/null || die "packages ${missing[*]} are missing and apt-get is not available"
  [[ $(id -u) == 0 ]] || die "packages ${missing[*]} are missing; installing them needs root"
  note "installing ${missing[*]} from Debian (log: $log)"
  local apt=(apt-get -y -q -o DPkg::Lock::Timeout=300
             -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  printf '+ %s\n' "${apt[*]} install ${missing[*]}" >>"$log"
  if ! "${apt[@]}" install --no-install-recommends "${missing[@]}" >>"$log" 2>&1 </dev/null; then
    run_logged "$log" "${apt[@]}" update
    run_logged "$log" "${apt[@]}" install --no-install-recommends "${missing[@]}"
  fi
}

# tcp_open HOST PORT: true if a TCP connection to HOST:PORT succeeds within 2 s.
tcp_open() {
  # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# wait_for SECONDS WHAT CMD...: poll CMD once a second until it succeeds; false after SECONDS.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { note "timed out after ${secs}s waiting for $what"; return 1; }
    sleep 1
  done
}

# pid_alive PID: true while any thread of the process runs. A multi-threaded process (a JVM
# shutting down) can show its main thread as a zombie while other threads still hold its sockets,
# so every thread's state counts, not just the main thread's.
pid_alive() {
  [[ -n ${1:-} && -d /proc/$1/task ]] || return 1
  awk '/^State:/ && $2 != "Z" && $2 != "X" { alive = 1; exit } END { exit !alive }' \
    /proc/"$1"/task/*/status 2>/dev/null
}

# pid_cmdline_has PID TEXT: true if PID is alive and its command line contains TEXT.
pid_cmdline_has() {
  pid_alive "$1" || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# with_table URL TABLE: the store URL URL with its lock table set to TABLE (table= appended),
# lowercased, with any character but letters, digits and "_" made "_".
# The run's databases are shared by every step; a README block or example given a table of its
# own does not read what another step left under the same name.
with_table() {
  local sep='?' table=${2,,}
  [[ $1 == *'?'* ]] && sep='&'
  printf '%s%stable=%s\n' "$1" "$sep" "${table//[^a-z0-9_]/_}"
}

# readme_blocks LANGS DIR CHECK RUN: the code blocks of LANGS (comma-separated) of the READMEs,
# as scripts/readme-blocks extracts them into DIR (one file per distinct block, wrapped): the
# function CHECK FILE compiles or type-checks each, then the function RUN FILE runs each
# runnable one. Both run with no stdin and must return non-zero on failure. A failure names
# the block's README:line; prints a "test result:" line counting README blocks; false if any
# failed. See DEVELOPERS.md, "README code blocks".
readme_blocks() {
  local langs=$1 dir=$2 check=$3 run=$4
  local mode file where n passed=0 failed=0 distinct=0
  mkdir -p "$dir"
  if ! "$BATON_ROOT/scripts/readme-blocks" extract "$langs" "$dir" >"$dir/manifest"; then
    echo "test result: FAILED. 0 passed; 1 failed"
    return 1
  fi
  while IFS=$'\t' read -r -u 3 mode file where; do
    read -r -a n <<<"$where"
    distinct=$((distinct + 1))
    if "$check" "$file" </dev/null && { [[ $mode != run ]] || "$run" "$file" </dev/null; }; then
      passed=$((passed + ${#n[@]}))
    else
      failed=$((failed + ${#n[@]}))
      note "FAILED: the README block at $where ($langs, $mode; as checked: $file)"
    fi
  done 3<"$dir/manifest"
  note "README blocks ($langs): $((passed + failed)) blocks ($distinct distinct) checked, $failed failed"
  printf 'test result: %s. %d passed; %d failed\n' "$( ((failed)) && echo FAILED || echo ok)" "$passed" "$failed"
  ((failed == 0))
}
