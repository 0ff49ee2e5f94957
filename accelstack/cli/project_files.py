"""The files `accelstack init` writes besides the spec: a deployable Pulumi project.

Texts with `@NAME@`-style placeholders filled by `project_files`. The CI workflow and its
script are not here: `init` writes the packaged examples/ci files as they are. The program entry runs `accelstack.components.entry.main`, the same
program as the repository's `__main__.py`.
"""

from __future__ import annotations

PULUMI_YAML = """\
name: @PROJECT@
description: accelstack training cluster(s); one Pulumi stack per spec in stacks/
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: venv
# main: the program is __main__.py in this directory (Pulumi's default for Python).
# Config per stack (Pulumi.<stack>.yaml): accelstack:spec (path of the workload spec; default
# stacks/<stack name>.yaml) and aws:region (must equal the spec's region).
"""

MAIN_PY = '''\
"""Pulumi program: the spec (config accelstack:spec, else stacks/<stack>.yaml) -> resolve ->
budget guard -> resources. Resource names: the spec's own stack keeps the spec's name; any
other stack (dev, prod, ...) prefixes them `<spec>-<stack>`. config aws:region must equal the
spec's region (a conflict is refused before anything is created)."""

from accelstack.components.entry import main

main()
'''

REQUIREMENTS = """\
# The Pulumi program's dependencies (pulumi installs them into venv/ on the first `pulumi up`;
# pip reads the wheel's path from this directory). accelstack @VERSION@ comes from the wheel kept
# in wheels/, never from a package index (no public index has it: a package registered under
# that name would run with the deploy credentials). `accelstack wheel .` refreshes it from the
# accelstack you run. accelstack pins pulumi, pulumi-aws and pulumi-kubernetes itself.
./wheels/@WHEEL@
"""

POLICY_PACK_YAML = """\
description: accelstack CrossGuard pack (budget and organisation ceiling, deploy rules, open
  ingress, IMDSv2, S3 public access), from the installed accelstack package
runtime:
  name: python
  options:
    virtualenv: ../venv
"""

POLICY_PACK_MAIN = '''\
"""The accelstack CrossGuard pack, run by `pulumi preview --policy-pack policies` (and `up`).
The policies come from the installed accelstack (accelstack.policypack): each stack's budget
and deploy rules are read from its spec, found as the program finds it."""

import os
from pathlib import Path

from pulumi_policy import PolicyPack

os.chdir(Path(__file__).resolve().parent.parent)  # the project: stacks/ and Pulumi.*.yaml

from accelstack.policypack.budget_policies import POLICIES  # noqa: E402

PolicyPack(name="accelstack", policies=POLICIES)
'''

GITIGNORE = """\
venv/
__pycache__/
*.pyc
"""
