#!/usr/bin/env bash
# Fails listing every commit subject longer than 72 characters from BASE
# (inclusive) to HEAD.
#
# BASE is 364170a ("List the formatting commit in .git-blame-ignore-revs"),
# the first commit made under the rule that a subject is at most 72
# characters; older history predates the rule and is not checked.
#
# A shallow clone that does not reach BASE is checked as far as it goes:
# every commit it holds is newer than BASE. Outside a git work tree (an
# unpacked tarball, say) there is nothing to check.
#
# Usage: scripts/check-commit-subjects.sh [BASE]
set -euo pipefail
export LC_ALL=C.UTF-8

readonly MAX=72
base=${1:-364170a}

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "check-commit-subjects: not a git repository, nothing to check"
  exit 0
fi

if git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  # BASE itself, then everything after it.
  commits=$(
    git rev-parse "$base^{commit}"
    git rev-list "$base..HEAD"
  )
elif [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  echo "check-commit-subjects: shallow clone without $base, checking the commits it holds"
  commits=$(git rev-list HEAD)
else
  echo "check-commit-subjects: base commit $base not found in this repository" >&2
  exit 2
fi

bad=0
while IFS= read -r sha; do
  [ -n "$sha" ] || continue
  subject=$(git log -1 --format=%s "$sha")
  if [ "${#subject}" -gt "$MAX" ]; then
    printf '%s (%d characters): %s\n' "$(git rev-parse --short "$sha")" "${#subject}" "$subject"
    bad=$((bad + 1))
  fi
done <<<"$commits"

if [ "$bad" -gt 0 ]; then
  echo "check-commit-subjects: $bad commit subject(s) longer than $MAX characters;" \
    "say what changed in at most $MAX and put the why in the body" >&2
  exit 1
fi
echo "check-commit-subjects: every subject since $base is at most $MAX characters"
