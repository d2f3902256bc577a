"""clients tier."""
