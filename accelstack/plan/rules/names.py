"""Deploy rules (names): owned by helper 10B; placeholder until merged."""
