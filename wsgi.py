"""WSGI entry point: `gunicorn wsgi:app` or `flask --app wsgi ...`."""

import gc

from app import create_app

app = create_app()
# What start-up loaded lives as long as the process: keep it out of the garbage collector's full
# passes, which otherwise walk every module, class and function on each collection of the oldest generation.
gc.freeze()
