"""The fixture projects under projects/ are workspaces for scripted runs, not part of tether's own suite."""

collect_ignore = ["projects"]
