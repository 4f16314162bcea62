from tfhadoop.cli import run

run()
