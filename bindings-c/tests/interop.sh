#!/usr/bin/env bash
# Interoperation of the C++ API with the `baton` command on one store:
#   while `baton run` holds a lock, the C++ try_lock says busy (and `baton locks` shows it);
#   while C++ holds one, `baton run --no-wait` exits 75, and `baton locks` shows it;
#   once each side releases, the other takes the lock at once.
# and the same with the C API (hold_c).
#   interop.sh BATON HOLD HOLD_C STORE_URL
set -euo pipefail
baton=$1 hold=$2 hold_c=$3 url=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"; kill $(jobs -p) 2>/dev/null || true' EXIT
export BATON_STORE=$url
name="interop-$$"

# wait_for FILE: until FILE exists, at most 30 s.
wait_for() {
  local deadline=$((SECONDS + 30))
  until [[ -e $1 ]]; do
    ((SECONDS < deadline)) || { echo "timed out waiting for $1" >&2; exit 1; }
    sleep 0.01
  done
}
expect() {  # expect STATUS COMMAND...: run it, fail unless it exits with STATUS
  local want=$1; shift
  local got=0
  "$@" || got=$?
  [[ $got == "$want" ]] || { echo "FAIL: $* exited $got, wanted $want" >&2; exit 1; }
  echo "ok: $* -> $got"
}

# Rust (the command) holds; C++ sees it held.
"$baton" run --lock "$name" -- sh -c "touch '$dir/inside'; while [ -e '$dir/inside' ]; do sleep 0.01; done" &
runner=$!
wait_for "$dir/inside"
expect 75 "$hold" "$url" "$name" try
expect 75 "$hold_c" "$url" "$name" try
"$baton" locks | grep -q "$name" || { echo "FAIL: baton locks does not show $name" >&2; exit 1; }
rm "$dir/inside"
expect 0 wait "$runner"
expect 0 "$hold" "$url" "$name" try

# held_by PROGRAM: PROGRAM (C++ or C) holds the lock; the command sees it held, then free.
held_by() {
  local program=$1
  "$program" "$url" "$name" "$dir/held" &
  local holder=$!
  wait_for "$dir/held"
  expect 75 "$baton" run --lock "$name" --no-wait -- true
  "$baton" locks | grep -q "$name" || { echo "FAIL: baton locks does not show $name" >&2; exit 1; }
  rm "$dir/held"
  expect 0 wait "$holder"
  expect 0 "$baton" run --lock "$name" --no-wait -- true
}
held_by "$hold"
held_by "$hold_c"
echo "interop: all checks passed"
