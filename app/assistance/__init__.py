"""Adaptive assistance: preferences, page context, proposable targets, capabilities and the gate."""
