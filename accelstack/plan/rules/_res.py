"""Small helpers the deploy rule modules share (pure: plan documents in, values out)."""

from __future__ import annotations

from typing import Any

from accelstack.plan.document import PlannedResource

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
FLEET = "aws:ec2/fleet:Fleet"
SUBNET = "aws:ec2/subnet:Subnet"
SSM_PARAMETER_LOOKUP = "aws:ssm/getParameter:getParameter"


def rid(r: PlannedResource) -> str:
    """How a violation names a resource: `type 'name'`."""
    return f"{r.type} '{r.name}'"


def get_in(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
