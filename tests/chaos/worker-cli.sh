#!/usr/bin/env bash
# The `baton` command's client of the fault harness (docs/faults-design.md): the same flags as
# chaos_worker, each section one `baton run` whose job talks to the register.
#
#   worker-cli.sh --url URL --strategy S --name NAME --register HOST:PORT --client ID
#                 [--seconds 60] [--ttl-ms 2000] [--hold-ms 50] [--wait-ms 10000]
#
# `baton` is $BATON_CLI, or the first on PATH. The job (below, run by `baton run`) sends
# `hello` with baton's pid (the process that holds the lock and renews it), then `begin`,
# `read`, `write` and `end` with $BATON_FENCING_TOKEN, over one connection. This loop then
# reports the release from baton's exit status: 0 ok, 70 lost, 69 store_unavailable (the job
# ran, so the lock call had succeeded); when the job did not run, the failed lock call
# (75 timed_out, 69 store_unavailable, other statuses exit_N).
set -euo pipefail

url="" strategy=unique-insert name=chaos register="" client="" seconds=60 ttl_ms=2000 hold_ms=50 wait_ms=10000
while (($#)); do
  (($# >= 2)) || { echo "worker-cli: $1 needs a value" >&2; exit 2; }
  case $1 in
    --url) url=$2 ;; --strategy) strategy=$2 ;; --name) name=$2 ;; --register) register=$2 ;;
    --client) client=$2 ;; --seconds) seconds=$2 ;; --ttl-ms) ttl_ms=$2 ;;
    --hold-ms) hold_ms=$2 ;; --wait-ms) wait_ms=$2 ;;
    *) echo "worker-cli: unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -n $url && -n $register && -n $client ]] || { echo "worker-cli: --url, --register and --client are needed" >&2; exit 2; }
baton=${BATON_CLI:-$(command -v baton || true)}
[[ -x $baton ]] || { echo "worker-cli: baton not found (set BATON_CLI)" >&2; exit 2; }
host=${register%:*} port=${register##*:}

exec 4<>"/dev/tcp/$host/$port" || { echo "worker-cli: register $register unreachable" >&2; exit 1; }
ask() {
  local answer
  printf '%s\n' "$1" >&4
  IFS= read -r -t 30 answer <&4 || { echo "worker-cli: no answer to '$1'" >&2; exit 1; }
  [[ $answer != bad* ]] || { echo "worker-cli: register refused '$1': $answer" >&2; exit 1; }
}

# The job: everything it needs comes in its environment.
# shellcheck disable=SC2016 # expanded by the job's own shell
job='
set -euo pipefail
echo "$BATON_FENCING_TOKEN" >"$CHAOS_MARK"
exec 3<>"/dev/tcp/$CHAOS_HOST/$CHAOS_PORT"
ask() {
  printf "%s\n" "$1" >&3
  IFS= read -r -t 30 answer <&3
  [[ $answer != bad* ]] || { echo "job: register refused $1: $answer" >&2; exit 1; }
}
c=$CHAOS_CLIENT t=$BATON_FENCING_TOKEN
ask "hello $c cli $PPID"
ask "begin $c $t"
ask "read $c $t"
read_answer=$answer
sleep "$CHAOS_HOLD"
if [[ $read_answer == value* ]]; then ask "write $c $t ${read_answer#value }"; fi
ask "end $c $t"
'

mark=$(mktemp)
trap 'rm -f "$mark"' EXIT
sections=0 errors=0 lost=0
deadline=$((SECONDS + seconds))
while ((SECONDS < deadline)); do
  : >"$mark"
  r=$((RANDOM % (hold_ms + 1)))
  hold=$(printf '%d.%03d' $((r / 1000)) $((r % 1000)))
  status=0
  CHAOS_MARK=$mark CHAOS_HOST=$host CHAOS_PORT=$port CHAOS_CLIENT=$client CHAOS_HOLD=$hold \
    "$baton" run --store "$url" --strategy "$strategy" --ttl "${ttl_ms}ms" --wait "${wait_ms}ms" \
    --lock "$name" -- bash -c "$job" 4>&- </dev/null >/dev/null 2>>"${CHAOS_LOG:-/dev/null}" || status=$?
  token=$(cat "$mark")
  if [[ -n $token ]]; then
    case $status in
      0) outcome=ok ;;
      70) outcome=lost; lost=$((lost + 1)) ;;
      69) outcome=store_unavailable ;;
      *) outcome=exit_$status ;;
    esac
    ask "release $client $token $outcome"
    sections=$((sections + 1))
  else
    case $status in
      75) code=timed_out ;;
      69) code=store_unavailable ;;
      *) code=exit_$status ;;
    esac
    ask "error $client $code"
    errors=$((errors + 1))
    sleep 0.02
  fi
done
echo "done client=$client sections=$sections refused=- lost=$lost lock_errors=$errors"
