"""tether.verify."""
