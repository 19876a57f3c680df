"""Parameter sweeps (issue 5); empty until sweeps are built."""
