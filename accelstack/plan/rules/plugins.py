"""Deploy rules (plugins)."""
