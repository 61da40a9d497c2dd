"""One module per `kjudge` subcommand group; each exposes `register(subparsers)`.

Modules are imported lazily by kjudge.cli so that `kjudge eval` on a GPU box never imports the
service stack (FastAPI, Celery, SQLAlchemy).
"""
