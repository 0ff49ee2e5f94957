#!/usr/bin/env bash
# The shell steps of the accelstack CI examples (github-actions.yml, gitlab-ci.yml), in one
# place so both CI systems run the same commands and a test can run them locally
# (tests/repo/test_ci_examples.py).
#
#   accelstack-ci.sh changed-stacks BASE HEAD  the specs of the stacks changed since BASE (merge
#                                              base): a spec edited, or its Pulumi.<stack>.yaml
#                                              (spec pointer, AMI pins, any accelstack: key)
#   accelstack-ci.sh stack-names BASE HEAD     those Pulumi stacks' names
#   accelstack-ci.sh stack-matrix BASE HEAD    the same as one JSON array (a CI job matrix)
#   accelstack-ci.sh check BASE HEAD           `accelstack check` on the changed stacks
#   accelstack-ci.sh diff BASE HEAD [FILE]     the PR comment (markdown) into FILE; below every
#                                              threshold, a short "no longer applies" body
#   accelstack-ci.sh github-comment FILE       create or update the PR comment (gh, GH_TOKEN,
#                                              PR_NUMBER); a "no longer applies" body updates
#                                              the earlier comment (deletes it with
#                                              ACCELSTACK_STALE_COMMENT=delete), or posts nothing
#   accelstack-ci.sh gitlab-comment FILE       the same on a merge request (GITLAB_TOKEN)
#
# Stacks are resolved by accelstack exactly as the Pulumi program resolves them (`accelstack
# stacks`): the project's Pulumi.<stack>.yaml files and the specs they point at, plus each
# spec's own stack. HEAD must be the checked-out commit.
#
# Environment: ACCELSTACK_SPECS (default stacks), ACCELSTACK (the command, default accelstack),
# ACCELSTACK_COMMENT_THRESHOLD_USD (default: always comment; per stack, never netted across
# stacks), ACCELSTACK_STACK_THRESHOLDS (space-separated STACK=USD overrides),
# ACCELSTACK_CEILING (the organisation's cost ceiling file; default accelstack-ceiling.yaml).
set -euo pipefail

SPECS="${ACCELSTACK_SPECS:-stacks}"
read -r -a ACCELSTACK_CMD <<<"${ACCELSTACK:-accelstack}"
MARKER='<!-- accelstack-diff -->'
QUIET='<!-- accelstack-diff:quiet -->'

die() {
  echo "accelstack-ci: $*" >&2
  exit 2
}

merge_base() {
  git merge-base "$1" "$2" || die "no merge base between '$1' and '$2'"
}

# The changed stacks are read from the work tree, so HEAD must be the checked-out commit.
since() {
  local base="$1" head="$2"
  [ "$(git rev-parse "${head}^{commit}")" = "$(git rev-parse HEAD)" ] ||
    die "'${head}' is not the checked-out commit; check it out first"
  merge_base "${base}" "${head}"
}

changed_stacks() {
  local from
  from="$(since "$1" "$2")"
  "${ACCELSTACK_CMD[@]}" stacks . --specs "${SPECS}" --base "${from}" --format specs
}

stack_names() {
  local from
  from="$(since "$1" "$2")"
  "${ACCELSTACK_CMD[@]}" stacks . --specs "${SPECS}" --base "${from}" --format names
}

stack_matrix() {
  local names
  names="$(stack_names "$@")" # a failure here fails the step: never an empty matrix
  python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().split()))' <<<"${names}"
}

check() {
  local from
  from="$(since "$1" "$2")"
  "${ACCELSTACK_CMD[@]}" check . --specs "${SPECS}" --base "${from}"
}

diff_comment() {
  local base="$1" head="$2" out="${3:-accelstack-diff.md}"
  local -a threshold=()
  local pair
  if [ -n "${ACCELSTACK_COMMENT_THRESHOLD_USD:-}" ]; then
    threshold=(--threshold-usd "${ACCELSTACK_COMMENT_THRESHOLD_USD}")
  fi
  for pair in ${ACCELSTACK_STACK_THRESHOLDS:-}; do
    threshold+=(--stack-threshold "${pair}")
  done
  local rc=0 from
  from="$(merge_base "${base}" "${head}")"
  "${ACCELSTACK_CMD[@]}" diff "${from}" "${head}" --specs "${SPECS}" \
    --format github-comment "${threshold[@]}" >"${out}" || rc=$?
  if grep -qF "${QUIET}" "${out}"; then
    echo "cost change below every threshold and nothing stateful replaced: no new comment"
  else
    cat "${out}"
  fi
  return "${rc}"
}

is_quiet() {
  grep -qF "${QUIET}" "$1"
}

github_comment() {
  local body="$1" id
  [ -s "${body}" ] || {
    echo "empty comment: nothing to post"
    return 0
  }
  : "${PR_NUMBER:?PR_NUMBER is not set}" "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
  id="$(gh api "repos/${GITHUB_REPOSITORY}/issues/${PR_NUMBER}/comments" --paginate \
    --jq ".[] | select(.body | contains(\"${MARKER}\")) | .id" | tail -n 1)"
  if is_quiet "${body}" && [ -z "${id}" ]; then
    echo "below every threshold and no earlier comment: nothing to post"
  elif is_quiet "${body}" && [ "${ACCELSTACK_STALE_COMMENT:-update}" = "delete" ]; then
    gh api --method DELETE "repos/${GITHUB_REPOSITORY}/issues/comments/${id}" >/dev/null
    echo "deleted the earlier comment ${id}: it no longer applies"
  elif [ -n "${id}" ]; then
    gh api --method PATCH "repos/${GITHUB_REPOSITORY}/issues/comments/${id}" \
      -F "body=@${body}" >/dev/null
  else
    gh pr comment "${PR_NUMBER}" --body-file "${body}"
  fi
}

gitlab_comment() {
  local body="$1" api notes id
  [ -s "${body}" ] || {
    echo "empty comment: nothing to post"
    return 0
  }
  : "${GITLAB_TOKEN:?GITLAB_TOKEN is not set}" "${CI_MERGE_REQUEST_IID:?not a merge request}"
  api="${CI_API_V4_URL}/projects/${CI_PROJECT_ID}/merge_requests/${CI_MERGE_REQUEST_IID}/notes"
  notes="$(curl --fail --silent --show-error --header "PRIVATE-TOKEN: ${GITLAB_TOKEN}" \
    "${api}?per_page=100")"
  id="$(MARKER="${MARKER}" python3 -c 'import json, os, sys
ids = [n["id"] for n in json.load(sys.stdin) if os.environ["MARKER"] in n.get("body", "")]
print(ids[-1] if ids else "")' <<<"${notes}")"
  if is_quiet "${body}" && [ -z "${id}" ]; then
    echo "below every threshold and no earlier comment: nothing to post"
  elif is_quiet "${body}" && [ "${ACCELSTACK_STALE_COMMENT:-update}" = "delete" ]; then
    curl --fail --silent --show-error --request DELETE --header "PRIVATE-TOKEN: ${GITLAB_TOKEN}" \
      "${api}/${id}" >/dev/null
  elif [ -n "${id}" ]; then
    curl --fail --silent --show-error --request PUT --header "PRIVATE-TOKEN: ${GITLAB_TOKEN}" \
      --data-urlencode "body@${body}" "${api}/${id}" >/dev/null
  else
    curl --fail --silent --show-error --request POST --header "PRIVATE-TOKEN: ${GITLAB_TOKEN}" \
      --data-urlencode "body@${body}" "${api}" >/dev/null
  fi
}

main() {
  local cmd="${1:-}"
  shift || true
  case "${cmd}" in
  changed-stacks) [ $# -eq 2 ] || die "usage: changed-stacks BASE HEAD" && changed_stacks "$@" ;;
  stack-names) [ $# -eq 2 ] || die "usage: stack-names BASE HEAD" && stack_names "$@" ;;
  stack-matrix) [ $# -eq 2 ] || die "usage: stack-matrix BASE HEAD" && stack_matrix "$@" ;;
  check) [ $# -eq 2 ] || die "usage: check BASE HEAD" && check "$@" ;;
  diff) [ $# -ge 2 ] || die "usage: diff BASE HEAD [FILE]" && diff_comment "$@" ;;
  github-comment) [ $# -eq 1 ] || die "usage: github-comment FILE" && github_comment "$@" ;;
  gitlab-comment) [ $# -eq 1 ] || die "usage: gitlab-comment FILE" && gitlab_comment "$@" ;;
  *) die "unknown command '${cmd}' (changed-stacks, stack-names, stack-matrix, check, diff, github-comment, gitlab-comment)" ;;
  esac
}

main "$@"
