"""Accounts: creating, editing and deleting users, and the forms for signing in and managing them."""
