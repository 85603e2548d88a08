#!/usr/bin/env bash
# The checks `npm test` runs before the tests: type-check, format, lint, commit subjects. Side by side, since
# each is one single-threaded process (together about 3 minutes in sequence on a 2-core machine); each one's
# output is printed whole once it ends, and the script fails if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

checks=(typecheck format:check lint check:commits)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A pids
for check in "${checks[@]}"; do
  npm run -s "$check" >"$out/$check.log" 2>&1 &
  pids[$check]=$!
done

failed=()
for check in "${checks[@]}"; do
  if wait "${pids[$check]}"; then
    echo "static check $check: ok"
  else
    failed+=("$check")
    echo "static check $check: FAILED"
    cat "$out/$check.log"
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "static checks failed: ${failed[*]} (run npm run <check> to see it alone)"
  exit 1
fi
