"""Deploy rules (issue 10, helper 10B): names."""
