"""The HTTP API (FastAPI): thin routes over db/ and the Celery queue."""
