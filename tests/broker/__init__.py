"""broker tier."""
