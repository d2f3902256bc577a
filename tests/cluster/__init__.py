"""cluster tier."""
