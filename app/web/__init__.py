"""Request plumbing shared by every area: htmx helpers, bodies, the error handler, sign-in and roles,
navigation, rendering, forms from pydantic.
"""
