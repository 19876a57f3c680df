"""Failure injection (issue 9); empty until faults are modelled."""
