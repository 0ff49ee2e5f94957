"""Deploy rules: what the offline plan must satisfy before a real `pulumi up` can succeed and
leave a working, safe cluster. Mocks accept any input; these rules encode what AWS, EKS and the
charts do not (each rule names the document it encodes).

One implementation, two entry points: `accelstack plan` / `accelstack check` call `evaluate`
on the offline plan, and the CrossGuard pack (`policies/`) calls it on `pulumi preview`'s
resources. A rule is a small function registered with `@deploy_rule(name, source, summary)`;
its body yields `(resource, message)` pairs and the framework builds the `Violation`s.

Pure Python: never imports Pulumi.
"""

from accelstack.plan.rules import (  # the rule modules register themselves on import
    access,
    amis,
    identity,
    names,
    network,
    nodegroups,
    plugins,
    resilience,
    security,
    standalone,
    storage,
)
from accelstack.plan.rules.registry import (
    RULES,
    DeployRule,
    RuleInfo,
    Violation,
    deploy_rule,
    evaluate,
    ref,
)

__all__ = [
    "RULES",
    "DeployRule",
    "RuleInfo",
    "Violation",
    "access",
    "amis",
    "deploy_rule",
    "evaluate",
    "identity",
    "names",
    "network",
    "nodegroups",
    "plugins",
    "ref",
    "resilience",
    "security",
    "standalone",
    "storage",
]
