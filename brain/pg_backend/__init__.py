"""PostgreSQL backend of the project: Django's, plus a short wait for the server when a connection is refused."""
