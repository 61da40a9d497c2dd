"""The Celery side of kjudge: the evaluate task, the reconciler and the per-GPU launcher.

What it shares with the API (settings, queue and task names, the Celery configuration, the
publisher the reconciler sends with) lives below both, in core/; the API never imports worker/.
Import-light on purpose: `kjudge worker` imports the launcher, so nothing here imports torch or
the evaluator at module level except `worker.tasks`.
"""
