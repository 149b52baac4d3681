"""tether.models."""
