"""container tier."""
