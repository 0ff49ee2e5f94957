"""accelstack: one workload spec to a priced, budget-checked AWS training cluster."""

__version__ = "0.1.0"
