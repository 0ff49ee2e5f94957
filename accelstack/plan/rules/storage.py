"""Deploy rules (storage)."""
