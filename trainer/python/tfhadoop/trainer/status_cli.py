"""``tfhadoop status``: see jobs_cli."""
from tfhadoop.trainer.jobs_cli import register_status as register  # noqa: F401
