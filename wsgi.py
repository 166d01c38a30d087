"""WSGI entry point: `flask --app wsgi serve`, `gunicorn wsgi:app`, and `huey_consumer wsgi.huey`."""

from app import create_app

app = create_app()
# The app's job queue, for huey's own consumer (`huey_consumer wsgi.huey`); `flask jobs worker` is the same.
huey = app.extensions["jobs"].huey
