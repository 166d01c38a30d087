"""The agent runtime: build an agent from its configuration, run a turn, stream and store its events."""
