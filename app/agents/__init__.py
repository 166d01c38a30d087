"""Agents and their model configurations: the editor's form, the model form, the connection check, the preview."""
