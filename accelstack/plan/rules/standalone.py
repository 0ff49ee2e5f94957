"""Deploy rules (standalone): owned by helper 10B; placeholder until merged."""
