"""The README `accelstack init` writes into a new project (`@STACK@`-style placeholders)."""

from __future__ import annotations

README = """\
# @PROJECT@

A Pulumi project made by `accelstack init` from the preset `@PRESET@`: an AWS training cluster
described by one workload spec, `stacks/@STACK@.yaml`. The program (`__main__.py`) reads the
spec, refuses it when over budget and creates every resource that `accelstack plan` shows.

| file | what it is |
|---|---|
| `Pulumi.yaml` | the project: Python runtime, dependencies installed by pip into `venv/` |
| `__main__.py` | the program entry: `accelstack.components.entry.main()` |
| `stacks/@STACK@.yaml` | the workload spec (validate with `accelstack validate`) |
| `Pulumi.@STACK@.yaml` | the stack's config: `aws:region` and `accelstack:spec` |
| `requirements.txt` | accelstack @VERSION@ from `wheels/`, by path (see below) |
| `wheels/` | the accelstack @VERSION@ wheel this project installs: no package index carries accelstack |
| `policies/` | the accelstack CrossGuard pack: `pulumi preview --policy-pack policies` |
| `.github/workflows/accelstack.yml` | CI (GitOps): on a pull request `check --strict`, the cost diff comment and an approved `pulumi preview`; on main `pulumi up` of every changed stack (see CI below) |
| `ci/accelstack-ci.sh` | every shell step of the workflow (the same as accelstack's `examples/ci`) |

## Offline first

```bash
python -m venv venv && venv/bin/pip install -r requirements.txt
venv/bin/accelstack plan stacks/@STACK@.yaml     # every resource, its price, the budget verdict
venv/bin/accelstack check stacks/                # every spec; non-zero on any violation
```

`requirements.txt` installs accelstack from the wheel kept in `wheels/` (a path, read from this
directory, so run pip here), never from a package index: no public index has accelstack, and a
package someone registered under that name would run wherever this project installs, CI's
deploy credentials included. Commit `wheels/`. To move to another accelstack version, install
it and run `accelstack wheel .` here: it writes that version's wheel, removes the old one and
updates `requirements.txt` (the same version gives the same bytes, so git shows no change).

## Deploy

Pick a state backend once (Pulumi keeps each stack's state there):

```bash
pulumi login --local                 # state on this machine (~/.pulumi)
pulumi login s3://my-state-bucket    # or an S3 bucket shared by the team
pulumi login                         # or Pulumi Cloud
```

Then create the stack, set its region (it must equal the spec's `region`; a different value
is refused before anything is created), pin the AMIs once (the program refuses to follow a
moving AMI alias on every run: an unrelated `pulumi up` would roll every node) and deploy with
AWS credentials in the environment:

First replace the placeholder values the preset carries (documentation CIDRs such as
203.0.113.0/24, the example account 111122223333): `accelstack validate stacks/@STACK@.yaml`
lists them, and `pulumi up` refuses them.

```bash
pulumi stack init @STACK@
pulumi config set aws:region @REGION@
accelstack amis pin stacks/@STACK@.yaml --stack @STACK@   # writes accelstack:amis
pulumi up --policy-pack policies                          # with the accelstack CrossGuard pack
```

`accelstack amis upgrade stacks/@STACK@.yaml` later shows which nodes a newer AMI would roll.

## CI: the gate, the comment, preview and deploy

`.github/workflows/accelstack.yml` is accelstack's `examples/ci/github-actions.yml` as it is.
On a pull request it runs from trusted code only (`pull_request_target`: the workflow of
`main`, accelstack installed from `main`'s `requirements.txt` and `wheels/`); the pull request
is checked out into `pr/` and read as data, and that job holds no cloud credential. It checks
the changed stacks with `accelstack check --strict` (budget, organisation ceiling, deploy
rules, placeholders, unpinned AMIs) and posts the cost and resource diff as one comment. A
`pulumi preview` of the pull request's program runs only after a reviewer approves the
`preview` environment, with a read-only role. A push to `main` checks and deploys every stack
whose inputs changed since the commit deployed last (every stack on the first push), creating
new stacks. Set up once, in the repository's settings:

- environments `preview` (required reviewers) and `production` (deployment branch `main`);
- variables `AWS_REGION`, `AWS_ROLE_ARN` (deploy) and `AWS_PREVIEW_ROLE_ARN` (read-only):
  IAM roles for GitHub's OIDC provider, each trusting only its environment's subject
  (`repo:ORG/REPO:environment:production`, `repo:ORG/REPO:environment:preview`);
- `PULUMI_BACKEND_URL` (variable) or the `PULUMI_ACCESS_TOKEN` secret, and
  `PULUMI_CONFIG_PASSPHRASE` for a self-managed backend;
- the `Check and diff` job as a required status check of `main`;
- a code owner for `accelstack-accept.yaml` (`.github/CODEOWNERS`:
  `accelstack-accept.yaml @your-org/platform-reviewers`, with "dismiss stale approvals" on).

A change the gate cannot plan (the program, a committed module, `requirements.txt` and what it
pulls in, the CI script, the kept wheel) is named in the comment and fails `check --strict`
until a reviewer accepts it: `accelstack accept . --base origin/main`, then commit the
`accelstack-accept.yaml` it writes (docs/gitops.md of accelstack, "Program inputs").

## Several stacks of one spec

Resource names come from the Pulumi stack: the spec's own stack (`@STACK@`) names resources
`@STACK@-...`; any other stack of the same spec appends its name, `@STACK@-<stack>-...`, so
dev, staging and prod coexist in one account:

```bash
pulumi stack init dev
pulumi config set accelstack:spec stacks/@STACK@.yaml
pulumi config set aws:region @REGION@
pulumi up
```

## Teardown

Stateful resources (the secrets KMS key, the compile-cache bucket, FSx for Lustre) are
protected, and an EKS cluster has deletion protection on (`cluster.deletion_protection`), so
`pulumi destroy` stops at them. To remove the whole stack on purpose:

```bash
pulumi stack export > backup.json    # keep a copy of the state
pulumi up                            # EKS: with cluster.deletion_protection: false in the spec
pulumi state unprotect --all         # allow deleting the protected resources
pulumi destroy
pulumi stack rm @STACK@
```

The compile-cache bucket is also retained on delete: after `pulumi destroy` it stays in the
account (empty and delete it with `aws s3 rb s3://BUCKET --force` when no longer wanted).
"""
