"""tether.observe."""
