"""``tfhadoop jobs``: see jobs_cli."""
from tfhadoop.trainer.jobs_cli import register_jobs as register  # noqa: F401
