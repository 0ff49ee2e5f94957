"""Deploy rules: what the offline plan must satisfy before a real `pulumi up` can succeed and
leave a working, safe cluster. Mocks accept any input; these rules encode what AWS, EKS and the
charts do not (each rule names the document it encodes).

One implementation, two entry points: `accelstack plan` / `accelstack check` call `evaluate`
on the offline plan, and the CrossGuard pack (`policies/`) calls it on `pulumi preview`'s
resources. A rule is a small function decorated with `@deploy_rule(name, source, summary)`;
its body yields `(resource, message)` pairs and the framework builds the `Violation`s. The
decorator registers nothing: each module lists its rules in `MODULE_RULES`, and `DEPLOY_RULES`
(`ruleset`) lists the modules' tuples in report order.

Pure Python: never imports Pulumi.
"""

from accelstack.plan.rules.registry import DeployRule, Violation, deploy_rule, ref
from accelstack.plan.rules.ruleset import DEPLOY_RULES, evaluate

__all__ = [
    "DEPLOY_RULES",
    "DeployRule",
    "Violation",
    "deploy_rule",
    "evaluate",
    "ref",
]
