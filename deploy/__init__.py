"""Serving the app to a room: ``python -m deploy.serve``, the Docker image and the compose file."""
