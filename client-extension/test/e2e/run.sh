#!/usr/bin/env bash
# Runs the editor tests (out/build/test/e2e/*.e2e.test.js), one suite at a time, from
# client-extension/. A suite that fails runs once more: a browser driving a real editor fails now
# and then for reasons of its own (a machine busy elsewhere, a reconnection), while a behaviour
# that is gone fails both times. The run fails when a suite fails twice. Before the second try,
# and again as the run's last lines (where CI's excerpt of the output is), it prints what the
# failed window logged: hdcontext's output channel and the chat fixture's hops, times and names
# only, never a conversation's content; its screenshots and logs stay in test-artifacts/<run>.first-try/.
# A suite that passed only on its second try is named.
#
#   run.sh [suite.e2e.test.js ...]   default: every suite in out/build/test/e2e/
set -uo pipefail
cd "$(dirname "$0")/../.."   # client-extension/

ARTIFACTS=../test-artifacts
mapfile -t SUITES < <(if [ $# -gt 0 ]; then printf '%s\n' "$@"; else ls out/build/test/e2e/*.e2e.test.js; fi)
DIGEST=$(mktemp)
SINCE=$(mktemp)   # its time: the logs written since the failed try began
trap 'rm -f "$DIGEST" "$SINCE"' EXIT

# What the kept logs of failed windows say (codeServer.ts keeps them under <artifacts>/<run>/logs).
digest() {
  local suite=$1 attempt=$2 found=0
  echo "── e2e: $(basename "$suite"), try $attempt failed: what its window logged ──"
  while IFS= read -r log; do
    found=1
    echo "$log:"
    tail -n 25 "$log" | cut -c1-300
  done < <(find "$ARTIFACTS" -path '*/logs/*' -name '*-hdcontext.log' -newer "$SINCE" 2>/dev/null | sort)
  while IFS= read -r hops; do
    found=1
    echo "$hops (hop[the agent's model], ms after the first):"
    node -e '
      const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const t0 = lines.length ? lines[0].at : 0;
      console.log(lines.map((l) => `${l.hop}${l.hop === "agent" ? "[" + l.model + "]" : ""}+${l.at - t0}`).join(" "));' "$hops"
  done < <(find "$ARTIFACTS" -name 'chat.log' -newer "$SINCE" 2>/dev/null | sort)
  [ "$found" = 1 ] || echo "(no window logs were kept)"
}

status=0
retried=()
for suite in "${SUITES[@]}"; do
  touch "$SINCE"
  if node --test --test-concurrency=1 --test-reporter=spec "$suite"; then
    continue
  fi
  digest "$suite" 1 | tee -a "$DIGEST"
  # The failed try's screenshots and logs stay, beside the second try's: <run>.first-try/.
  for d in "$ARTIFACTS"/*/; do
    d=${d%/}
    case "$d" in *.first-try) continue ;; esac
    if [ -n "$(find "$d" -newer "$SINCE" -print -quit)" ]; then
      rm -rf "$d.first-try" && mv "$d" "$d.first-try"
    fi
  done
  echo "e2e: $(basename "$suite") failed; running it once more (the first try's files: test-artifacts/*.first-try/)"
  touch "$SINCE"
  if node --test --test-concurrency=1 --test-reporter=spec "$suite"; then
    retried+=("$(basename "$suite")")
  else
    digest "$suite" 2 >>"$DIGEST"
    status=1
  fi
done

if [ ${#retried[@]} -gt 0 ]; then
  echo "e2e: passed on the second try: ${retried[*]} (the first try's logs are above)"
fi
if [ "$status" != 0 ]; then
  cat "$DIGEST"
  echo "e2e: failed (screenshots and logs: test-artifacts/)"
fi
exit "$status"
