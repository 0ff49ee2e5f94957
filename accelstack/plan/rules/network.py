"""Deploy rules (network): owned by helper 10B; placeholder until merged."""
