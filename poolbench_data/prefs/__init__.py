"""Preference data: physics-labelled pairs, their format check, the simulator as a reward."""
