"""Small shared helpers for the components (pure: no resources created here)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Tags that identify the stack; stateful resources carry only stable tags so that changing
#: `spec.tags` never touches their inputs (user tags reach AWS through the provider's
#: default_tags instead, see components/program.py).
STABLE_TAG_KEYS = ("accelstack:stack", "managed-by")


def stable_tags(tags: dict[str, str], name: str | None = None, **extra: str) -> dict[str, str]:
    out = {k: tags[k] for k in STABLE_TAG_KEYS if k in tags}
    if name:
        out["Name"] = name
    out.update(extra)
    return out


def short_hash(text: str, n: int = 8) -> str:
    """A stable short id for names derived from user values (e.g. principal ARNs)."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def policy_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def assume_role_policy(service: str, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> str:
    act: str | list[str] = actions[0] if len(actions) == 1 else list(actions)
    return policy_json(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": act}],
        }
    )


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def managed_policy_output(partition: Any, name: str) -> Any:
    """`managed_policy_arn` for a partition that is a Pulumi input (lazy import of pulumi)."""
    import pulumi

    def arn(part: str) -> str:
        return managed_policy_arn(part, name)

    return pulumi.Output.from_input(partition).apply(arn)
