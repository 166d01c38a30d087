"""WSGI entry point: `flask --app wsgi serve`, `gunicorn wsgi:app`, and `huey_consumer wsgi.huey`."""

import gc

from app import create_app

app = create_app()
# The app's job queue, for huey's own consumer (`huey_consumer wsgi.huey`); `flask jobs worker` is the same.
huey = app.extensions["jobs"].huey
# What start-up loaded lives as long as the process: keep it out of the garbage collector's full
# passes, which otherwise walk every module, class and function on each collection of the oldest generation.
gc.freeze()
