"""A tiny statistics package (the demo's workspace)."""

from .core import mean, median

__all__ = ["mean", "median"]
