"""Alembic migrations for the service database (run through `kjudge db upgrade`)."""
