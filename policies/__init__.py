"""accelstack CrossGuard policy pack (pulumi-policy). `__main__.py` builds the PolicyPack."""
