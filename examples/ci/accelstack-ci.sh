#!/usr/bin/env bash
# The shell steps of the accelstack CI examples (github-actions.yml, gitlab-ci.yml), in one
# place so both CI systems run the same commands and a test can run them locally
# (tests/repo/test_ci_examples.py, tests/repo/test_ci_workflow_run.py). `accelstack init`
# writes this file as ci/accelstack-ci.sh.
#
# Review (a pull or merge request): the CI runs this script, and accelstack, from the base
# branch (trusted); the change is a second checkout, read as data from the directory the
# commands run in: nothing of it is installed or run.
#   accelstack-ci.sh changed-stacks BASE HEAD  the specs of the stacks changed since BASE (merge
#                                              base): a spec edited, or its Pulumi.<stack>.yaml
#                                              (spec pointer, AMI pins, any accelstack: key)
#   accelstack-ci.sh stack-names BASE HEAD     those Pulumi stacks' names
#   accelstack-ci.sh stack-matrix BASE HEAD    the same as one JSON array (a CI job matrix)
#   accelstack-ci.sh check BASE HEAD           `accelstack check --strict` on the changed stacks
#                                              (ACCELSTACK_STRICT=0: without --strict)
#   accelstack-ci.sh diff BASE HEAD [FILE]     the PR comment (markdown) into FILE; below every
#                                              threshold, a short "no longer applies" body
#   accelstack-ci.sh github-comment FILE       create or update the PR comment (gh, GH_TOKEN,
#                                              PR_NUMBER); a "no longer applies" body updates
#                                              the earlier comment (deletes it with
#                                              ACCELSTACK_STALE_COMMENT=delete), or posts nothing
#   accelstack-ci.sh gitlab-comment FILE       the same on a merge request (GITLAB_TOKEN)
#   accelstack-ci.sh preview STACK             `pulumi preview` of an existing stack with the
#                                              policy pack ACCELSTACK_POLICY_PACK (default
#                                              policies); a stack not created yet is named
# Deploy (a push to the default branch, trusted code):
#   accelstack-ci.sh deploy-names BEFORE HEAD  the stacks whose deploy inputs differ between
#                                              BEFORE (the commit deployed last: the push's
#                                              `before`) and HEAD; every stack when BEFORE is
#                                              all zeros (the branch's first push) or unknown
#                                              here (a force-push dropped it)
#   accelstack-ci.sh deploy-matrix BEFORE HEAD the same as one JSON array
#   accelstack-ci.sh check-stack STACK         `accelstack check --strict` of one stack
#   accelstack-ci.sh deploy STACK              select the stack, creating it when new, and
#                                              `pulumi up` it with the policy pack
#
# Stacks are resolved by accelstack exactly as the Pulumi program resolves them (`accelstack
# stacks`): the project's Pulumi.<stack>.yaml files and the specs they point at, plus each
# spec's own stack. HEAD must be the checked-out commit.
#
# Environment: ACCELSTACK_SPECS (default stacks), ACCELSTACK (the command, default accelstack),
# ACCELSTACK_COMMENT_THRESHOLD_USD (default: always comment; per stack, never netted across
# stacks), ACCELSTACK_STACK_THRESHOLDS (space-separated STACK=USD overrides),
# ACCELSTACK_CEILING (the organisation's cost ceiling file; default: the base ref's
# accelstack-ceiling.yaml), PULUMI_BACKEND_URL (pulumi login URL; empty: Pulumi Cloud).
set -euo pipefail

SPECS="${ACCELSTACK_SPECS:-stacks}"
read -r -a ACCELSTACK_CMD <<<"${ACCELSTACK:-accelstack}"
MARKER='<!-- accelstack-diff -->'
QUIET='<!-- accelstack-diff:quiet -->'
# A push's `before` when the branch did not exist (GitHub's push event; GitLab's
# CI_COMMIT_BEFORE_SHA): https://docs.gitlab.com/ci/variables/predefined_variables/
NO_COMMIT=0000000000000000000000000000000000000000

die() {
  echo "accelstack-ci: $*" >&2
  exit 2
}

merge_base() {
  git merge-base "$1" "$2" || die "no merge base between '$1' and '$2'"
}

# The changed stacks are read from the work tree, so HEAD must be the checked-out commit.
checked_out() {
  [ "$(git rev-parse "${1}^{commit}")" = "$(git rev-parse HEAD)" ] ||
    die "'${1}' is not the checked-out commit; check it out first"
}

since() {
  checked_out "$2"
  merge_base "$1" "$2"
}

strict() {
  [ "${ACCELSTACK_STRICT:-1}" = "0" ] || echo --strict
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

as_matrix() {
  python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().split()))' <<<"$1"
}

stack_matrix() {
  local names
  names="$(stack_names "$@")" # a failure here fails the step: never an empty matrix
  as_matrix "${names}"
}

# The commit last deployed from, or nothing when every stack is to be deployed: a branch's
# first push (BEFORE all zeros) or a force-push whose BEFORE this clone does not hold. BEFORE
# itself, not a merge base: after a force-push, what the dropped commits deployed differs too.
deployed_from() {
  local before="$1"
  checked_out "$2"
  if [ -z "${before}" ] || [ "${before}" = "${NO_COMMIT}" ]; then
    echo "accelstack-ci: the branch's first push: every stack" >&2
  elif ! git cat-file -e "${before}^{commit}" 2>/dev/null; then
    echo "accelstack-ci: ${before} is not in this clone (a force-push): every stack" >&2
  else
    echo "${before}"
  fi
}

deploy_names() {
  local from
  from="$(deployed_from "$@")"
  if [ -n "${from}" ]; then
    "${ACCELSTACK_CMD[@]}" stacks . --specs "${SPECS}" --base "${from}" --format names
  else
    "${ACCELSTACK_CMD[@]}" stacks . --specs "${SPECS}" --format names
  fi
}

deploy_matrix() {
  local names
  names="$(deploy_names "$@")"
  as_matrix "${names}"
}

check() {
  local from
  from="$(since "$1" "$2")"
  # shellcheck disable=SC2046 # `strict` prints one flag or nothing
  "${ACCELSTACK_CMD[@]}" check . --specs "${SPECS}" --base "${from}" $(strict)
}

check_stack() {
  # shellcheck disable=SC2046
  "${ACCELSTACK_CMD[@]}" check . --specs "${SPECS}" --stack "$1" $(strict)
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

pulumi_login() {
  if [ -n "${PULUMI_BACKEND_URL:-}" ]; then
    pulumi login "${PULUMI_BACKEND_URL}"
  else
    pulumi login
  fi
}

preview() {
  local stack="$1"
  pulumi_login
  if ! pulumi stack select --stack "${stack}" --non-interactive; then
    echo "stack ${stack} does not exist yet: the deploy on merge creates it (no preview)"
    return 0
  fi
  pulumi preview --stack "${stack}" --policy-pack "${ACCELSTACK_POLICY_PACK:-policies}" \
    --non-interactive
}

deploy() {
  local stack="$1"
  pulumi_login
  pulumi stack select --create --stack "${stack}" --non-interactive
  pulumi up --stack "${stack}" --policy-pack "${ACCELSTACK_POLICY_PACK:-policies}" \
    --yes --non-interactive
}

usage() {
  [ "$1" -eq "$2" ] || die "usage: ${cmd} $3"
}

main() {
  cmd="${1:-}"
  shift || true
  case "${cmd}" in
  changed-stacks) usage $# 2 "BASE HEAD" && changed_stacks "$@" ;;
  stack-names) usage $# 2 "BASE HEAD" && stack_names "$@" ;;
  stack-matrix) usage $# 2 "BASE HEAD" && stack_matrix "$@" ;;
  check) usage $# 2 "BASE HEAD" && check "$@" ;;
  diff) [ $# -ge 2 ] || die "usage: diff BASE HEAD [FILE]" && diff_comment "$@" ;;
  github-comment) usage $# 1 "FILE" && github_comment "$@" ;;
  gitlab-comment) usage $# 1 "FILE" && gitlab_comment "$@" ;;
  preview) usage $# 1 "STACK" && preview "$@" ;;
  deploy-names) usage $# 2 "BEFORE HEAD" && deploy_names "$@" ;;
  deploy-matrix) usage $# 2 "BEFORE HEAD" && deploy_matrix "$@" ;;
  check-stack) usage $# 1 "STACK" && check_stack "$@" ;;
  deploy) usage $# 1 "STACK" && deploy "$@" ;;
  *) die "unknown command '${cmd}' (changed-stacks, stack-names, stack-matrix, check, diff, github-comment, gitlab-comment, preview, deploy-names, deploy-matrix, check-stack, deploy)" ;;
  esac
}

main "$@"
