"""tether.cli."""
