"""``tfhadoop logs``: see jobs_cli."""
from tfhadoop.trainer.jobs_cli import register_logs as register  # noqa: F401
