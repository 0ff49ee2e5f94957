"""The plan stage: run the Pulumi program under mocks (`engine`), answer its lookups offline
(`lookups`), and describe what it declared (`document`)."""

from accelstack.plan.document import (
    SECRET_MARK,
    Plan,
    PlanError,
    PlanInputError,
    PlannedResource,
    render_tree,
)
from accelstack.plan.engine import Program, run_plan
from accelstack.plan.lookups import ACCOUNT_ID, Answers, fake_ami

__all__ = [
    "ACCOUNT_ID",
    "SECRET_MARK",
    "Answers",
    "Plan",
    "PlanError",
    "PlanInputError",
    "PlannedResource",
    "Program",
    "fake_ami",
    "render_tree",
    "run_plan",
]
