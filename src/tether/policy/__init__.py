"""tether.policy."""
