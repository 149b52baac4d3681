"""tether.control."""
