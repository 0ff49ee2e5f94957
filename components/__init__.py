"""Pulumi components for accelstack training clusters (pulumi_aws primitives only).

Each component takes one typed Args dataclass, names its children ``f"{name}-<role>"`` with
``parent=self`` and ends with ``register_outputs``. The facts come from
`accelstack.resolve.Stack` / `ResolvedPool`; the pure helpers in each module turn them into
resource inputs and are unit-tested without Pulumi. `components.program.build` wires them.
"""
