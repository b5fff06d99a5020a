"""Repository-local pytest setup."""
