"""The Pulumi program: stacks/<stack>.yaml -> resolve -> cost guard -> components.

Thin on purpose: `accelstack.components.entry.main` reads the config (spec, names, region) and
calls `accelstack.components.program.build`, which `accelstack plan` also runs offline under
Pulumi's mocks. Projects made by `accelstack init` call the same `main`.
"""

from __future__ import annotations

from accelstack.components.entry import main

main()
