"""Deploy rules (amis): owned by helper 10B; placeholder until merged."""
