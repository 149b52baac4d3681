"""Hooks: tether answering another agent's (Claude Code's, Codex's) tool calls, prompts and stops.

Nothing is imported here: ``tether hook`` imports :mod:`.entry`, whose path to a daemon's answer must stay
free of the heavy modules (docs/hook-latency.md).
"""
