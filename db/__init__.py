"""The service's database: SQLAlchemy 2 models (one module) and the session factory.

Shared by api/ and worker/; PostgreSQL in production, SQLite for the embedded default.
"""
