"""``tfhadoop follow``: see jobs_cli."""
from tfhadoop.trainer.jobs_cli import register_follow as register  # noqa: F401
