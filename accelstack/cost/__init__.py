"""The cost stage: `pricing` (every billable resource priced from the catalog, fail closed),
`estimate` (the training run: FLOPs over chips x peak x MFU), `guard` (the budget verdict and
the report), `compare` (the same workload on every candidate type)."""
