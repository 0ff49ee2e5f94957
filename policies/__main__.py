"""The accelstack CrossGuard pack. Run by the Pulumi CLI:

    pulumi preview --policy-pack policies

Each stack's budget and deploy rules come from its spec, found at preview time (config
`accelstack:spec`, else stacks/<stack>.yaml); `--policy-pack-config policies/config.example.json`
is optional and overrides the budget limits by hand.

The PolicyPack constructor starts the analyzer server and blocks, so it is built only here;
the policies themselves live in `budget_policies.py` (tests import that).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # accelstack, policies
    from pulumi_policy import PolicyPack

    from policies.budget_policies import POLICIES

    PolicyPack(name="accelstack", policies=POLICIES)
