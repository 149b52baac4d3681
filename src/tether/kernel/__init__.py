"""tether.kernel."""
