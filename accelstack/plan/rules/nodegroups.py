"""Deploy rules (nodegroups)."""
