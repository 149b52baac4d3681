"""tether.envelope."""
