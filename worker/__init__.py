"""The Celery side of kjudge: routing, the evaluate task, the reconciler and the per-GPU launcher.

Import-light on purpose: the API imports `worker.routing` and `worker.celery_app` on its request
path, so nothing here imports torch or the evaluator at module level except `worker.tasks`.
"""
