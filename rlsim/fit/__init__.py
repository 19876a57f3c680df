"""Fitting rlsim's framework costs to a measured run: reading its logs, fitting, reporting."""
