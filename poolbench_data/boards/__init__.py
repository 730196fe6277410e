"""Boards: seeded generation in the seven categories, their checks, pottability."""
