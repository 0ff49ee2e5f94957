#!/usr/bin/env bash
# The shell steps of the accelstack CI examples (github-actions.yml, gitlab-ci.yml), in one
# place so both CI systems run the same commands and a test can run them locally
# (tests/test_ci_examples.py).
#
#   accelstack-ci.sh changed-stacks BASE HEAD  spec files added or changed since BASE (merge base)
#   accelstack-ci.sh stack-names BASE HEAD     their Pulumi stack names (stacks/NAME.yaml -> NAME)
#   accelstack-ci.sh check BASE HEAD           `accelstack check` on the changed specs
#   accelstack-ci.sh diff BASE HEAD [FILE]     the PR comment (markdown) into FILE; empty when
#                                              the change is below ACCELSTACK_COMMENT_THRESHOLD_USD
#   accelstack-ci.sh github-comment FILE       create or update the PR comment (gh, GH_TOKEN, PR_NUMBER)
#   accelstack-ci.sh gitlab-comment FILE       the same on a merge request (GITLAB_TOKEN)
#
# Environment: ACCELSTACK_SPECS (default stacks), ACCELSTACK (the command, default accelstack),
# ACCELSTACK_COMMENT_THRESHOLD_USD (default: always comment).
set -euo pipefail

SPECS="${ACCELSTACK_SPECS:-stacks}"
read -r -a ACCELSTACK_CMD <<<"${ACCELSTACK:-accelstack}"
MARKER='<!-- accelstack-diff -->'

die() {
  echo "accelstack-ci: $*" >&2
  exit 2
}

changed_stacks() {
  local base="$1" head="$2"
  git diff --name-only --diff-filter=ACMR "${base}...${head}" -- "${SPECS}" |
    grep -E '\.ya?ml$' | grep -v -E '(^|/)Pulumi\.[^/]*$' || true
}

stack_names() {
  local file
  while IFS= read -r file; do
    [ -n "${file}" ] || continue
    file="${file##*/}"
    echo "${file%.*}"
  done < <(changed_stacks "$1" "$2")
}

check() {
  local -a files=()
  local file
  while IFS= read -r file; do
    [ -n "${file}" ] && files+=("${file}")
  done < <(changed_stacks "$1" "$2")
  if [ "${#files[@]}" -eq 0 ]; then
    echo "no spec changed under ${SPECS}/"
    return 0
  fi
  "${ACCELSTACK_CMD[@]}" check "${files[@]}"
}

diff_comment() {
  local base="$1" head="$2" out="${3:-accelstack-diff.md}"
  local -a threshold=()
  if [ -n "${ACCELSTACK_COMMENT_THRESHOLD_USD:-}" ]; then
    threshold=(--threshold-usd "${ACCELSTACK_COMMENT_THRESHOLD_USD}")
  fi
  local rc=0
  "${ACCELSTACK_CMD[@]}" diff "${base}" "${head}" --specs "${SPECS}" \
    --format github-comment "${threshold[@]}" >"${out}" || rc=$?
  if [ -s "${out}" ]; then
    cat "${out}"
  else
    echo "cost change below the threshold and nothing stateful replaced: no comment"
  fi
  return "${rc}"
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
  if [ -n "${id}" ]; then
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
  if [ -n "${id}" ]; then
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
  check) [ $# -eq 2 ] || die "usage: check BASE HEAD" && check "$@" ;;
  diff) [ $# -ge 2 ] || die "usage: diff BASE HEAD [FILE]" && diff_comment "$@" ;;
  github-comment) [ $# -eq 1 ] || die "usage: github-comment FILE" && github_comment "$@" ;;
  gitlab-comment) [ $# -eq 1 ] || die "usage: gitlab-comment FILE" && gitlab_comment "$@" ;;
  *) die "unknown command '${cmd}' (changed-stacks, stack-names, check, diff, github-comment, gitlab-comment)" ;;
  esac
}

main "$@"
