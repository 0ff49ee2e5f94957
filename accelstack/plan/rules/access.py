"""Deploy rules (access)."""
