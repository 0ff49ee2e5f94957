"""The "prototype on both" loop's node side: `runner` times a short trial of the user's
entrypoint and appends one throughput record per node (standard library only)."""
