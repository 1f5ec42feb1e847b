"""Shared pieces of the parallelism passes (the device grid they all extend)."""
