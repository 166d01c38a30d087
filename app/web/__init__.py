"""Request plumbing: htmx helpers, the error handler, sign-in and roles, navigation, rendering, forms."""
