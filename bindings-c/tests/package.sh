#!/usr/bin/env bash
# The package as a user gets it: `cmake --install` of this build into a fresh prefix; a user
# project built against it with find_package(baton) and with add_subdirectory; a C program
# built with pkg-config alone. The programs lock a SQLite store; one holds its lock while
# `baton locks` shows it; seed 002's quote examples also run on every database the
# environment names (BATON_POSTGRES_URL, BATON_MYSQL_URL, BATON_CASSANDRA_URL). The add_subdirectory build makes the Rust library as this build did
# (PROFILE, and CARGO_COMMAND if set: see BATON_CARGO_COMMAND in ../CMakeLists.txt), so that
# cargo finds it made rather than compiling the whole tree again in another profile.
#   package.sh BUILD_DIR BATON_CLI SOURCE_DIR [PROFILE [CARGO_COMMAND]]
set -euo pipefail
build=$1 baton=$2 source=$3 profile=${4:-release} cargo_command=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT
export BATON_STORE="sqlite://$work/locks.db"

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/baton.h" && test -f "$work/prefix/include/baton.hpp" && test -f "$work/prefix/include/baton/object.hpp"

for how in package subdirectory; do
  args=(-DCMAKE_PREFIX_PATH="$work/prefix")
  [[ $how == subdirectory ]] && args=(-DBATON_SOURCE="$source" -DBATON_BUILD_TESTS=OFF
    -DBATON_CARGO_PROFILE="$profile" -DBATON_CARGO_COMMAND="$cargo_command")
  cmake -S "$source/tests/consumer" -B "$work/$how" "${args[@]}" >/dev/null
  # The subdirectory build makes only the two programs it runs: the suites, built in the
  # package's project and run below, are the longest C++ compilations here.
  targets=()
  [[ $how == subdirectory ]] && targets=(--target register_user register_user_c)
  cmake --build "$work/$how" -j 2 "${targets[@]}" >/dev/null
  "$work/$how/register_user" "$BATON_STORE" "snap-$how"
  "$work/$how/register_user_c" "$BATON_STORE" "snap-$how-c"
  echo "ok: built with $how and ran"
done

# Seed 002's quote examples, built against the installed package, on SQLite and on each database
# the environment names.
for url in "$BATON_STORE" ${BATON_POSTGRES_URL:+"$BATON_POSTGRES_URL"} \
  ${BATON_MYSQL_URL:+"$BATON_MYSQL_URL"} ${BATON_CASSANDRA_URL:+"$BATON_CASSANDRA_URL"}; do
  for example in stock_quote optimistic_quote; do
    "$work/package/$example" "$url" "GOOG-package-$$" >/dev/null ||
      { echo "FAIL: $example on ${url%%\?*}" >&2; exit 1; }
  done
  echo "ok: the quote examples on ${url%%[:?]*}"
done

# The C and C++ suites (locking, fencing, and every kind of bad input: NULL, non-UTF-8, empty,
# NUL-bearing and 1 MiB names, zero and negative durations, double unlock, a forked child's
# unlock, a dead store) against the installed package, on the memory store.
for suite in c_api cpp_api; do
  (cd "$work" && BATON_TEST_URL=memory: "$work/package/$suite" >"$work/$suite.log" 2>&1) ||
    { cat "$work/$suite.log"; echo "FAIL: $suite against the installed package" >&2; exit 1; }
  echo "ok: $suite against the installed package"
done

# pkg-config alone, as a C user without CMake would (the shared library).
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/register_user_pc" "$source/examples/register_user.c" $(pkg-config --cflags --libs baton)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir baton)" "$work/register_user_pc" "$BATON_STORE" snap-pkg-config
echo "ok: built with pkg-config and ran"

# The installed package's program holds a lock that the command sees.
"$work/package/hold" "$BATON_STORE" held-by-cpp "$work/held" &
holder=$!
deadline=$((SECONDS + 30))
until [[ -e $work/held ]]; do
  ((SECONDS < deadline)) || { echo "FAIL: the lock was not taken" >&2; exit 1; }
  sleep 0.01
done
"$baton" locks | tee "$work/locks.txt"
grep -q held-by-cpp "$work/locks.txt" || { echo "FAIL: baton locks does not show it" >&2; exit 1; }
rm "$work/held"
wait "$holder"
"$baton" run --lock held-by-cpp --no-wait -- true
echo "package: all checks passed"
