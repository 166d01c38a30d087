"""Request plumbing shared by every area: bodies, input checks, errors, security, htmx."""
