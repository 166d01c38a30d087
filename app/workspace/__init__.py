"""What the Workspace assistant's tools do, over the same domain functions the admin and data pages use.

Each function takes the acting user's id, reads the user's role again, and refuses (`Refused`) what the
pages would refuse that role; `Invalid` is a mistake the model can fix. Creation reconciles exact-name
matches (`reuse.py`); nothing here overwrites an existing resource without `confirm`.
"""
