"""Deploy rules (identity)."""
