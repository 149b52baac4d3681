"""tether.sandbox."""
